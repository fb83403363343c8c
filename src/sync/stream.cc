// Streams and events (tessera/stream.hpp): an ordered queue of work run by one thread per stream.
//
// Completion is a counter: the stream's thread runs item k (numbered from 1 in enqueue order) and then
// publishes done = k, so "everything enqueued before ticket t has run" is done >= t. An event is a
// (stream, ticket) pair; waiting for it parks on the low 32 bits of done (sync/word_wait.h: spin, yield,
// futex, under TESSERA_TIMEOUT), woken by the thread after every item when somebody sleeps.
//
// The queue itself is a mutex and a condition variable: enqueue is not a hot path (one per collective), and
// an idle stream thread must not spin on a 2-core machine.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <tessera/stream.hpp>

#include "base/cpu.h"
#include "base/log.h"
#include "base/trace.h"
#include "sync/word_wait.h"

namespace tessera {
namespace detail {

struct StreamState {
  struct Item {
    std::string what;
    std::function<void()> fn;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  uint64_t enqueued = 0;                 // items ever enqueued (guarded by mu)
  bool stop = false;                     // guarded by mu
  std::string running;                   // what the thread runs now (guarded by mu; for timeouts)
  std::string error;                     // first failure, sticky (guarded by mu)
  uint64_t error_item = 0;               // its number (guarded by mu)
  // The first failure was a PeerFailure (resilient mode): the waits rethrow that type, so that a recovery
  // loop catches one type whether the call ran on a stream or not (guarded by mu).
  bool error_peer = false, error_revoked = false;
  bool reported = false;                 // thrown to the user at least once (guarded by mu)
  std::atomic<uint64_t> done{0};         // items finished, in order
  std::atomic<uint32_t> done32{0};       // low bits of done: the futex word
  std::atomic<uint32_t> sleepers{0};
  std::thread thread;
  std::string label = "comm stream";     // traces and messages: "comm stream", "compute stream", ...
  // Between begin_capture and end_capture (only the owning thread enqueues then): items recorded, not run.
  std::shared_ptr<std::vector<Graph::Item>> capture;

  void run(int id) {
    unbind_thread_to_job_cpus();
    if (trace::g_on) trace::name_thread(fmt::format("{} {}", label, id));
    for (;;) {
      Item item;
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;  // stop, and nothing left
        item = std::move(queue.front());
        queue.pop_front();
        running = item.what;
      }
      std::string failure;
      bool peer = false, revoked = false;
      bool skip;
      {
        std::lock_guard lk(mu);
        skip = !error.empty();
      }
      // TESSERA_TRACE: each item as a span of this stream's track, its description as detail.
      const uint64_t traced = trace::g_on ? trace::now() : 0;
      if (!skip) {
        try {
          item.fn();
        } catch (const PeerFailure& e) {
          failure = e.what();
          peer = true;
          revoked = e.revoked();
        } catch (const std::exception& e) {
          failure = e.what();
        } catch (...) {
          failure = "unknown exception";
        }
      }
      {
        std::lock_guard lk(mu);
        if (!failure.empty() && error.empty()) {
          error = item.what + ": " + failure;
          error_item = done.load(std::memory_order_relaxed) + 1;
          error_peer = peer;
          error_revoked = revoked;
        }
        running.clear();
      }
      // The item's captures go before it counts as done: whoever waits for it may then drop the last
      // reference to what they refer to (a Python-owned tensor, say) knowing this thread holds none.
      item.fn = nullptr;
      const uint64_t d = done.load(std::memory_order_relaxed) + 1;
      if (traced)
        trace::complete(trace::Cat::kStream, "item", traced, trace::now(), trace::intern(item.what),
                        {.k0 = "item", .a0 = static_cast<int64_t>(d), .k1 = "skipped", .a1 = skip});
      done.store(d, std::memory_order_release);
      sync::store_and_wake(done32, static_cast<uint32_t>(d), sleepers);
    }
  }

  // Blocks until done >= ticket, under the deadline; then throws a sticky error of an item up to ticket.
  void wait_for(uint64_t ticket, const char* who, bool throw_error = true) {
    trace::Scope traced(trace::Cat::kStream, "event wait", who, {.k0 = "item", .a0 = static_cast<int64_t>(ticket)});
    for (uint64_t d; (d = done.load(std::memory_order_acquire)) < ticket;) {
      sync::wait_while_equal(done32, static_cast<uint32_t>(d), sleepers, {}, [&] {
        std::lock_guard lk(mu);
        return fmt::format("{}: {} to finish item #{} ({} of {} items done; running: {}; {} queued)", who, label,
                           ticket, done.load(), enqueued, running.empty() ? "nothing" : running, queue.size());
      });
    }
    std::lock_guard lk(mu);
    if (throw_error && error_item != 0 && error_item <= ticket) {
      reported = true;
      std::string text = fmt::format("{}: item #{} ({}) failed; the items after it were skipped", label, error_item, error);
      if (error_peer) throw PeerFailure(std::move(text), error_revoked);
      throw Error(std::move(text));
    }
  }

  uint64_t push(std::string what, std::function<void()> fn) {
    std::lock_guard lk(mu);
    queue.push_back({std::move(what), std::move(fn)});
    cv.notify_one();
    return ++enqueued;
  }

  uint64_t ticket() {
    std::lock_guard lk(mu);
    return enqueued;
  }
};

}  // namespace detail

Stream::Stream() : Stream(std::string()) {}

Stream::Stream(std::string label) : s_(std::make_shared<detail::StreamState>()) {
  static std::atomic<int> streams{0};  // numbers the streams' trace tracks in creation order
  if (!label.empty()) s_->label = std::move(label);
  s_->thread = std::thread([s = s_, id = streams.fetch_add(1)] { s->run(id); });
}

Stream::~Stream() {
  s_->wait_for(s_->ticket(), "~Stream", false);
  {
    std::lock_guard lk(s_->mu);
    if (!s_->error.empty() && !s_->reported)
      log::warn("{} destroyed with a failure nobody synchronized on: item #{} ({})", s_->label, s_->error_item,
                s_->error);
    s_->stop = true;
    s_->cv.notify_one();
  }
  s_->thread.join();
}

void Stream::enqueue(std::string what, std::function<void()> fn) {
  if (!fn) throw Error("Stream::enqueue(" + what + "): empty function");
  if (s_->capture) {
    s_->capture->push_back({std::move(what), std::move(fn)});
    return;
  }
  s_->push(std::move(what), std::move(fn));
}

bool Stream::capturing() const { return s_->capture != nullptr; }

void Stream::begin_capture() {
  if (s_->capture) throw Error(s_->label + ": begin_capture: the stream is capturing already");
  // The stream's earlier items run first: a collective captured next is made into a plan on this thread,
  // which needs its communicator idle. A failure among them stays sticky for the next synchronize().
  s_->wait_for(s_->ticket(), "Stream::begin_capture", false);
  s_->capture = std::make_shared<std::vector<Graph::Item>>();
}

Graph Stream::end_capture() {
  if (!s_->capture) throw Error(s_->label + ": end_capture: the stream is not capturing (begin_capture first)");
  Graph g;
  g.items_ = std::move(s_->capture);
  return g;
}

void Graph::launch(Stream& s) const {
  if (!items_) throw Error("Graph::launch: an empty graph (not made by Stream::end_capture)");
  if (s.capturing()) throw Error("Graph::launch: the stream is capturing");
  for (const Item& it : *items_) s.enqueue(it.what, it.fn);
}

size_t Graph::size() const { return items_ ? items_->size() : 0; }

void Stream::wait(const Event& e) {
  if (s_->capture)
    throw Error(s_->label + ": wait: a capturing stream cannot wait for an event (a captured graph replays the "
                "items of one stream; join streams around its launch)");
  if (!e.s_) return;
  if (e.s_ == s_) return;  // a stream runs in order: its own earlier work is done by then
  auto other = e.s_;
  const uint64_t t = e.ticket_;
  s_->push(fmt::format("wait for event #{} of another stream", t), [other, t] { other->wait_for(t, "Stream::wait"); });
}

void Stream::synchronize() { s_->wait_for(s_->ticket(), "Stream::synchronize"); }

void Event::record(Stream& s) {
  if (s.s_->capture)
    throw Error(s.s_->label + ": Event::record: the stream is capturing (record the event after the graph's launch)");
  s_ = s.s_;
  ticket_ = s_->ticket();
  if (trace::g_on)
    trace::instant(trace::Cat::kStream, "event record", nullptr, {.k0 = "item", .a0 = static_cast<int64_t>(ticket_)});
}

bool Event::query() const { return !s_ || s_->done.load(std::memory_order_acquire) >= ticket_; }

void Event::synchronize() const {
  if (s_) s_->wait_for(ticket_, "Event::synchronize");
}

}  // namespace tessera
