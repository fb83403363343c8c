// Streams and events: ordered asynchronous work on a thread of its own, shared by the collectives (comm
// streams, coll.hpp) and the SPMD kernels and operators (compute streams, kernel.hpp), with CUDA's semantics:
// - items of one stream run in enqueue order, each after the previous one has returned;
// - Event::record(s) marks everything enqueued on s so far; the event completes when all of it has run
//   (an event never recorded is complete); recording again moves the mark;
// - Stream::wait(e) makes the items enqueued on the stream after the call start only once e has completed,
//   whichever stream e belongs to: a compute stream may wait for a collective and a comm stream for a kernel,
//   with no host thread joining them;
// - Stream::synchronize() and Event::synchronize() block the calling thread; every such wait has the
//   TESSERA_TIMEOUT deadline and names what it waited for.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <tessera/error.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

namespace detail {
struct StreamState;
}
class Event;
class Stream;

/// A captured schedule (a CUDA graph's role): the items one stream was given between begin_capture() and
/// end_capture(), replayed in the same order by launch(), as often as wanted. Collectives enqueued while
/// capturing are captured as persistent plans (coll.hpp: Plan), so their algorithm and checks are fixed
/// once; kernels keep their launch options. Cheap to copy (the items are shared).
class Graph {
 public:
  /// Enqueues every captured item on `s` (any stream not capturing), in order.
  void launch(Stream& s) const;
  size_t size() const;  // items captured

 private:
  friend class Stream;
  friend struct detail::StreamState;
  struct Item {
    std::string what;
    std::function<void()> fn;
  };
  std::shared_ptr<std::vector<Item>> items_;
};


/// A stream: work enqueued on it runs in order, one item at a time, on the stream's own thread, while the
/// enqueuing thread goes on. The same type carries collectives (a comm stream: tessera::coll's calls with a
/// Stream argument, the Bucketer) and kernels and operators (a compute stream: tessera::kernel::launch(stream,
/// ...), OpOptions::stream); events join streams of either kind in either direction. Not collective: each
/// PE makes its own.
/// - Buffers passed to work on a stream must stay valid, and unmodified where they are inputs, until an
///   Event recorded after that work has completed (or synchronize() returned).
/// - A communicator used on a stream belongs to that stream until the stream is synchronized: calls on it
///   from another thread or stream meanwhile are an error (the library reports concurrent use when it sees
///   it), and every member must enqueue the same collectives in the same order, as with blocking calls.
/// - The first work item that fails (it throws, e.g. a bad argument) makes the stream's error sticky: later
///   items are skipped, and synchronize() and the Event::synchronize() of events recorded after it throw an
///   Error naming the item (a PeerFailure when the item failed for a member's failure or a revoke, in
///   resilient mode). Peers then wait for this PE in their collective until TESSERA_TIMEOUT. The
///   destructor waits for the queue and, if nobody was told of a failure, logs it (it never throws).
/// - Every wait for a stream or event has the TESSERA_TIMEOUT deadline; on expiry the PE prints what the
///   stream was running and how many items were pending, and the job ends.
/// - The progress thread runs on every CPU of the job, not only the PE's own.
class Stream {
 public:
  Stream();
  /// `label` names the stream's thread in traces ("<label> <n>"; the default is "comm stream").
  explicit Stream(std::string label);
  ~Stream();  // waits for everything enqueued, then ends the thread
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Runs fn after everything enqueued before it. `what` names the item in errors and timeouts. fn (with
  /// its captures) is destroyed on the stream's thread before the item counts as done for synchronize()
  /// and events.
  void enqueue(std::string what, std::function<void()> fn);
  /// Later items start only once `e` has completed (e may belong to another stream).
  void wait(const Event& e);
  /// Blocks until everything enqueued so far has run; throws Error if an item failed.
  void synchronize();

  /// Capture: until end_capture(), items enqueued on this stream (by this thread) are recorded into a Graph
  /// instead of run. begin_capture() first waits for the stream's earlier items. A collective enqueued
  /// meanwhile is made into a persistent plan at once (collective, so every member captures the same
  /// sequence), which needs the communicator idle: other streams that use it must be synchronized first.
  /// Waiting for an event or recording one on a capturing stream throws Error.
  void begin_capture();
  Graph end_capture();
  bool capturing() const;

 private:
  friend class Event;
  std::shared_ptr<detail::StreamState> s_;
};

/// A point in a stream: record() marks everything enqueued on the stream so far; the event completes when
/// all of it has run. An event never recorded counts as complete. Cheap to copy.
class Event {
 public:
  Event() = default;
  void record(Stream& s);
  bool query() const;     // completed? (never blocks)
  void synchronize() const;  // blocks until completed; throws Error if the stream failed before it

 private:
  friend class Stream;
  std::shared_ptr<detail::StreamState> s_;
  uint64_t ticket_ = 0;
};

}  // namespace tessera
