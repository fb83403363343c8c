// The TCP transport (the record "tcp", transport.h): connections of Tessera's own between PEs on different
// hosts, two per pair, made at open() (connect.cc):
//   - the messages' connection: the collectives' two-sided messages, send/recv/wait of the record
//     (messages.cc);
//   - the stream connection: frames of a fixed-size header and bulk bytes written straight from the sender's
//     buffer and read straight into place (streams.cc). The record itself has no RMA; the UCX record sends
//     its large puts as frames (ucx/rma.cc) and registers, as a Sink, where a frame's bytes go and what
//     happens once they are there. Calls go one way: UCX calls this transport, never the reverse, except
//     through the Sink it registered.
// On when TESSERA_NET_MESSAGES=tcp (the default) and the job spans hosts; with TESSERA_NET_MESSAGES=ucx it
// reaches no peer and the UCX record carries the messages (transport.cc chooses by declared capability).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "transport/transport.h"

namespace tessera::transport::tcp {

// Whether open() made the connections.
bool on();

// Where the frames of the stream connections go: set by the record that writes them (UCX, at its open(),
// after this transport's), before any frame is read.
struct Sink {
  size_t header_bytes = 0;  // every frame's header; at most kMaxFrameHeader
  // Checks the header of a frame from `pe` (the sender's word: log::fatal on one that no Tessera PE sends,
  // before anything is written) and returns where its *bytes bytes go.
  char* (*place)(int pe, const void* header, size_t* bytes) = nullptr;
  // The frame's bytes are in place.
  void (*landed)(const void* header) = nullptr;
};
constexpr size_t kMaxFrameHeader = 128;
void set_sink(const Sink& sink);

// Frames are read only by a thread that watches the stream connections (the UCX progress thread): on once
// that thread runs (set_streams_read(true)); until then, and with TESSERA_NET_MESSAGES=ucx, streams_on()
// is false and the writer keeps its data on its own path.
void set_streams_read(bool on);
bool streams_on();
// Writes a frame (the sink's header_bytes of `header`, then `bytes` from src) on `pe`'s stream connection;
// returns once src may be reused. One frame at a time per connection.
void stream_write(int pe, const void* header, const void* src, size_t bytes);
// The stream connections to watch, (fd, PE), and reading PE's when it is readable: false when it ended at
// the end of the job (`closing`: the writer's close() has begun; stop watching it). Any other end, or a
// failed read, ends the job naming the peer.
std::vector<std::pair<int, int>> stream_fds();
bool stream_readable(int pe, bool closing);

}  // namespace tessera::transport::tcp
