// What a peer on another host may ask of this PE's memory, checked before anything is written or read: the
// headers of puts, gets and atomics arrive from the network (active messages, ucx/messages.cc, and Tessera's
// own connections, ucx/sockets.cc), and their offsets, lengths and operators are the sender's word. A header
// that fails a check is a named error that ends the job (log::fatal, naming the peer and the values), never a
// write outside the symmetric memory, a read of other memory sent back, or an operator applied at random.
// Pure functions of the header and this PE's segment sizes, so that unit tests and fuzzers reach them
// without UCX.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace tessera::transport::ucx {

// Whether [off, off + bytes) lies inside this PE's symmetric memory: the heap, offsets [0, heap_bytes), or
// the data segment, offsets [heap_bytes, heap_bytes + data_bytes). No sum can wrap.
inline bool symmetric_range(uint64_t off, uint64_t bytes, uint64_t heap_bytes, uint64_t data_bytes) {
  if (off < heap_bytes) return bytes <= heap_bytes - off;
  const uint64_t d = off - heap_bytes;
  return d <= data_bytes && bytes <= data_bytes - d;
}

struct Segments {
  uint64_t heap_bytes = 0;
  uint64_t data_bytes = 0;
};

// "" when a put of `bytes` at `off` (with a signal word at sig_off when sig_op >= 0: 0 set, 1 add) may land
// here, else why not. `length` is what arrived (or will) for the data: it must be the header's byte count.
inline std::string put_error(uint64_t off, uint64_t bytes, uint64_t length, int32_t sig_op, uint64_t sig_off,
                             Segments s) {
  if (length != bytes) return fmt::format("a put whose header says {} bytes carries {}", bytes, length);
  if (!symmetric_range(off, bytes, s.heap_bytes, s.data_bytes))
    return fmt::format("a put of {} bytes at symmetric offset {:#x}, outside this PE's heap ({} bytes) and data "
                       "segment ({} bytes)", bytes, off, s.heap_bytes, s.data_bytes);
  if (sig_op < -1 || sig_op > 1) return fmt::format("a put with signal operator {} (0 set, 1 add, -1 none)", sig_op);
  if (sig_op >= 0 && (sig_off % 8 != 0 || !symmetric_range(sig_off, 8, s.heap_bytes, s.data_bytes)))
    return fmt::format("a put whose signal word is at symmetric offset {:#x}, not an aligned 8-byte word of this "
                       "PE's symmetric memory", sig_off);
  return "";
}

// A batch of small puts (a session's, rma.cc): one message whose data is `puts` entries, each a BatchEntry
// followed by its bytes, padded to a multiple of 8.
struct BatchEntry {
  uint64_t off;
  uint64_t bytes;
};
inline constexpr uint64_t batch_padded(uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; }

// "" when `length` bytes at `data` hold exactly `puts` entries, each of which may land here, else why not.
inline std::string batch_error(const char* data, uint64_t length, uint64_t puts, Segments s) {
  uint64_t at = 0;
  for (uint64_t i = 0; i < puts; ++i) {
    if (length - at < sizeof(BatchEntry))
      return fmt::format("a batch of {} puts whose {} bytes end inside entry {}", puts, length, i);
    BatchEntry e;
    std::memcpy(&e, data + at, sizeof e);
    at += sizeof(BatchEntry);
    if (e.bytes > length - at || batch_padded(e.bytes) > length - at)
      return fmt::format("a batch of {} puts whose entry {} says {} bytes where {} are left", puts, i, e.bytes,
                         length - at);
    if (!symmetric_range(e.off, e.bytes, s.heap_bytes, s.data_bytes))
      return fmt::format("a batched put of {} bytes at symmetric offset {:#x}, outside this PE's heap ({} bytes) and "
                         "data segment ({} bytes)", e.bytes, e.off, s.heap_bytes, s.data_bytes);
    at += batch_padded(e.bytes);
  }
  if (at != length) return fmt::format("a batch of {} puts that carries {} bytes beyond them", puts, length - at);
  return "";
}

// "" when a get of `bytes` at `off` may be answered from here, else why not.
inline std::string get_error(uint64_t off, uint64_t bytes, Segments s) {
  if (!symmetric_range(off, bytes, s.heap_bytes, s.data_bytes))
    return fmt::format("a get of {} bytes at symmetric offset {:#x}, outside this PE's heap ({} bytes) and data "
                       "segment ({} bytes)", bytes, off, s.heap_bytes, s.data_bytes);
  return "";
}

// "" when an atomic `op` (an AtomicOp, 0..kLastAtomicOp) on a word of `size` bytes at `off` may be applied
// here, else why not.
inline std::string atomic_error(uint64_t off, int32_t size, int32_t op, int32_t last_op, Segments s) {
  if (size != 4 && size != 8) return fmt::format("an atomic on a word of {} bytes (4 or 8)", size);
  if (op < 0 || op > last_op) return fmt::format("an atomic with operator {} (0 to {})", op, last_op);
  if (off % static_cast<uint64_t>(size) != 0 ||
      !symmetric_range(off, static_cast<uint64_t>(size), s.heap_bytes, s.data_bytes))
    return fmt::format("an atomic on {} bytes at symmetric offset {:#x}, not an aligned word of this PE's heap ({} "
                       "bytes) and data segment ({} bytes)", size, off, s.heap_bytes, s.data_bytes);
  return "";
}

}  // namespace tessera::transport::ucx
