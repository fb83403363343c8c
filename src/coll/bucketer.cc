// Gradient bucketing (coll.hpp: Bucketer), the way data-parallel training overlaps gradient allreduce with
// the rest of the backward pass.
//
// The layout is fixed at the first mark_ready(): gradients, in declaration order, are cut into buckets of
// consecutive gradients of one type holding at most bucket_bytes (a gradient larger than that is a bucket
// of its own). A bucket whose gradients lie end to end in memory (one flat gradient buffer cut into views,
// as frameworks allocate them) is allreduced in place as one span; any other bucket of several gradients is
// packed into a flat buffer, allreduced and unpacked, all inside one stream item, so the caller's thread
// only counts readiness. Packing costs two extra copies of the bucket: on ResNet-50's gradients it doubled
// the step's allreduce time, so flat gradient storage is worth having.
// Buckets are launched strictly in index order (bucket k waits for k-1 to be launched), which keeps the
// collective sequence identical on every member whatever order the gradients become ready in.
//
// Time window (TESSERA_BUCKET_WINDOW_US or the constructor's `window`; HCCL fuses by size or time): a
// bucket whose last gradient becomes ready long after its first holds the earlier ones back, so their
// allreduce no longer overlaps the backward pass. Readiness times are a property of the step, and each
// member sees its own, so a layout cut by time on every member separately would differ between members and
// their collectives would no longer match. As PyTorch DDP rebuilds its buckets after the first iteration
// from rank 0's order, the first step runs on the size-only layout while every member records when each
// gradient was marked ready; its finish() has rank 0 cut by size, type and time (a bucket closes before a
// gradient that became ready more than `window` after the bucket's first one), broadcasts the cut points,
// and every member rebuilds its layout from them. This happens once: later steps keep that layout, since a
// rebuild per step would cost a blocking broadcast per step and move buckets (and packing buffers) under
// a training loop that has settled, for readiness times that vary only by noise.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include <tessera/coll.hpp>

#include "base/config.h"
#include "base/memcopy.h"
#include "base/trace.h"
#include "coll/types.h"

namespace tessera::coll {
namespace {
const config::Var<int64_t> kWindowUs{
    "TESSERA_BUCKET_WINDOW_US", 0,
    "Gradient bucketing time window in microseconds (0: off): after the first step, a Bucketer made without "
    "an explicit window also closes a bucket before a gradient that became ready, on rank 0, more than this "
    "long after the bucket's first one"};

std::chrono::microseconds window_from_env() {
  const int64_t us = kWindowUs.get();
  if (us < 0)
    config::fatal_config(invalid_arg("TESSERA_BUCKET_WINDOW_US={}: must be 0 (off) or a positive number of "
                                     "microseconds", us));
  return std::chrono::microseconds(us);
}
}  // namespace

struct Bucketer::Impl {
  struct Grad {
    void* data;
    size_t count;
    DataType type;
    size_t bucket = 0;
    bool ready = false;
    std::chrono::steady_clock::time_point ready_at{};  // first step only, with a window
    Event after{};  // mark_ready(i, event): the bucket's allreduce waits for it on the stream
  };
  struct Bucket {
    size_t first = 0, last = 0;  // gradients [first, last)
    size_t elems = 0;
    DataType type{};
    size_t pending = 0;          // gradients not yet ready this step
    bool contiguous = true;      // the gradients lie end to end: allreduce the span in place
    std::vector<unsigned char> flat;  // packing buffer (other buckets of more than one gradient)
  };
  Comm& comm;
  Stream& stream;
  size_t cap;
  RedOp op;
  std::vector<Grad> grads;
  std::vector<Bucket> buckets;
  size_t next_launch = 0;
  bool fixed = false;
  std::chrono::microseconds window;  // 0: size only
  bool timing = false;               // this step records readiness times (the first step, with a window)

  Impl(Comm& c, Stream& s, size_t b, RedOp o, std::chrono::microseconds w)
      : comm(c), stream(s), cap(b), op(o), window(w) {}

  static size_t esize(DataType t) { return dtype_size(static_cast<DType>(t)); }

  // Where buckets start (1 at a gradient that opens one): by size and type, and with `by_time` also by this
  // member's readiness times of the step that just ended.
  std::vector<uint8_t> cuts(bool by_time) const {
    std::vector<uint8_t> starts(grads.size(), 0);
    size_t first = 0, bytes = 0;
    for (size_t i = 0; i < grads.size(); ++i) {
      const size_t n = grads[i].count * esize(grads[i].type);
      const bool open = i == 0 || grads[i].type != grads[first].type || bytes + n > cap ||
                        (by_time && grads[i].ready_at - grads[first].ready_at > window);
      if (open) {
        starts[i] = 1;
        first = i;
        bytes = 0;
      }
      bytes += n;
    }
    return starts;
  }

  void fix_layout() {
    fixed = true;
    timing = window.count() > 0;
    build(cuts(false));
  }

  // The buckets, their contiguity and packing buffers from the cut points. A type change always starts a
  // bucket, even where rank 0's cuts have none (members that declared different gradients): the mismatch
  // then shows as a collective of a different count or type, which the consistency check reports.
  void build(const std::vector<uint8_t>& starts) {
    buckets.clear();
    for (size_t i = 0; i < grads.size(); ++i) {
      Bucket* b = buckets.empty() ? nullptr : &buckets.back();
      if (!b || starts[i] || b->type != grads[i].type) {
        buckets.push_back(Bucket{i, i, 0, grads[i].type, 0, true, {}});
        b = &buckets.back();
      }
      if (b->last > b->first) {
        const Grad& prev = grads[b->last - 1];
        b->contiguous = b->contiguous &&
                        static_cast<char*>(prev.data) + prev.count * esize(prev.type) == static_cast<char*>(grads[i].data);
      }
      b->last = i + 1;
      b->elems += grads[i].count;
      grads[i].bucket = buckets.size() - 1;
    }
    for (Bucket& b : buckets) {
      b.pending = b.last - b.first;
      if (b.pending > 1 && !b.contiguous) b.flat.resize(b.elems * esize(b.type));
    }
  }

  // End of the first step with a window: rank 0's cut points become every member's layout. Called by every
  // member at the same point of its collective sequence, with the stream drained: the communicator is this
  // thread's again, and no stream item still uses the packing buffers that build() replaces.
  void rebuild() {
    std::vector<uint8_t> starts = comm.rank() == 0 ? cuts(true) : std::vector<uint8_t>(grads.size(), 0);
    comm.broadcast(starts.data(), starts.data(), starts.size(), DataType::kUint8, 0);
    build(starts);
  }

  void launch(size_t k) {
    Bucket& b = buckets[k];
    const DataType t = b.type;
    // Gradients made by work on another stream (a compute stream): the allreduce starts after their events,
    // which the stream waits for (and, if the compute stream failed, fails its item too: the sticky error
    // then reaches finish()); the caller's thread does not wait.
    for (size_t i = b.first; i < b.last; ++i) stream.wait(grads[i].after);
    // TESSERA_TRACE: the launch on the caller's track (the allreduce itself runs on the stream's).
    trace::Scope traced(trace::Cat::kBucket, "bucket launch", b.contiguous ? "in place" : "packed",
                        {.k0 = "bucket", .a0 = static_cast<int64_t>(k),
                         .k1 = "bytes", .a1 = static_cast<int64_t>(b.elems * esize(t))});
    if (b.contiguous) {
      void* span = grads[b.first].data;
      comm.allreduce(span, span, b.elems, t, op, stream);
      return;
    }
    std::vector<std::pair<void*, size_t>> parts;  // (data, bytes)
    for (size_t i = b.first; i < b.last; ++i) parts.emplace_back(grads[i].data, grads[i].count * esize(t));
    unsigned char* flat = b.flat.data();
    const size_t elems = b.elems;
    stream.enqueue(fmt_item(k, elems, t), [this, parts = std::move(parts), flat, elems, t] {
      size_t off = 0;
      for (const auto& [p, n] : parts) {
        memcopy(flat + off, p, n);
        off += n;
      }
      comm.allreduce(flat, flat, elems, t, op);
      off = 0;
      for (const auto& [p, n] : parts) {
        memcopy(p, flat + off, n);
        off += n;
      }
    });
  }

  static std::string fmt_item(size_t k, size_t elems, DataType t) {
    return "bucket " + std::to_string(k) + " (allreduce of " + std::to_string(elems) + " " +
           dtype_name(static_cast<DType>(t)) + ", packed)";
  }
};

Bucketer::Bucketer(Comm& comm, Stream& stream, size_t bucket_bytes, RedOp op)
    : Bucketer(comm, stream, bucket_bytes, op, window_from_env()) {}

Bucketer::Bucketer(Comm& comm, Stream& stream, size_t bucket_bytes, RedOp op, std::chrono::microseconds window)
    : p_(std::make_unique<Impl>(comm, stream, bucket_bytes, op, window)) {
  if (bucket_bytes == 0) throw Error("Bucketer: bucket_bytes must be positive");
  if (window.count() < 0)
    throw Error("Bucketer: the window is " + std::to_string(window.count()) + " us; it must be 0 (off) or positive");
}

Bucketer::~Bucketer() = default;

size_t Bucketer::add(void* data, size_t count, DataType t) {
  if (p_->fixed) throw Error("Bucketer::add: the layout is fixed once a gradient has been marked ready");
  if (!data && count) throw Error("Bucketer::add: gradient " + std::to_string(p_->grads.size()) + " is null with a count of " + std::to_string(count));
  if (static_cast<size_t>(t) >= kNumDTypes)
    throw Error("Bucketer::add: data type " + std::to_string(static_cast<int>(t)) + " is not one of the 10 supported types");
  p_->grads.push_back({.data = data, .count = count, .type = t});
  return p_->grads.size() - 1;
}

void Bucketer::mark_ready(size_t index) { mark_ready(index, Event()); }

void Bucketer::mark_ready(size_t index, const Event& ready) {
  Impl& m = *p_;
  if (index >= m.grads.size())
    throw Error("Bucketer::mark_ready: gradient " + std::to_string(index) + " is out of range: " +
                std::to_string(m.grads.size()) + " were added");
  if (!m.fixed) m.fix_layout();
  Impl::Grad& g = m.grads[index];
  if (g.ready)
    throw Error("Bucketer::mark_ready: gradient " + std::to_string(index) + " was already marked ready in this step");
  g.ready = true;
  g.after = ready;
  if (m.timing) g.ready_at = std::chrono::steady_clock::now();
  --m.buckets[g.bucket].pending;
  while (m.next_launch < m.buckets.size() && m.buckets[m.next_launch].pending == 0) m.launch(m.next_launch++);
}

void Bucketer::finish() {
  Impl& m = *p_;
  if (!m.fixed) m.fix_layout();
  if (m.next_launch < m.buckets.size()) {
    std::string missing;
    size_t n = 0;
    for (size_t i = 0; i < m.grads.size(); ++i)
      if (!m.grads[i].ready) {
        if (n++ < 8) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
      }
    if (n > 8) missing += ", ...";
    throw Error("Bucketer::finish: " + std::to_string(n) + " gradient(s) not marked ready in this step (" + missing +
                "); buckets " + std::to_string(m.next_launch) + ".." + std::to_string(m.buckets.size() - 1) +
                " were not launched");
  }
  m.stream.synchronize();
  for (auto& g : m.grads) g.ready = false, g.after = Event();
  for (auto& b : m.buckets) b.pending = b.last - b.first;
  m.next_launch = 0;
  if (m.timing) {
    m.timing = false;
    m.rebuild();
  }
}

size_t Bucketer::bucket_count() const { return p_->buckets.size(); }

size_t Bucketer::bucket_of(size_t index) const {
  if (!p_->fixed || index >= p_->grads.size())
    throw Error("Bucketer::bucket_of: gradient " + std::to_string(index) + " has no bucket yet (" +
                std::to_string(p_->grads.size()) + " added, layout " + (p_->fixed ? "fixed" : "not fixed") + ")");
  return p_->grads[index].bucket;
}

bool Bucketer::bucket_in_place(size_t bucket) const {
  if (bucket >= p_->buckets.size())
    throw Error("Bucketer::bucket_in_place: bucket " + std::to_string(bucket) + " is out of range: there are " +
                std::to_string(p_->buckets.size()));
  return p_->buckets[bucket].contiguous;
}

}  // namespace tessera::coll
