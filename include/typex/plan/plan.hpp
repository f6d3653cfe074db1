// typex/plan/plan.hpp — what a plan is made of: where each value lives (its location and layout),
// the arena's buffers with their lifetimes, and the report users read.
//
// A plan is made per set of input extents by plan::planner (planner.hpp) for any backend: it binds
// every node's extents, folds constants, elides views, groups nodes into steps by the fusion rules
// (rules.hpp) and assigns every intermediate an offset in one arena. A backend lowers the steps to
// its kernels (backend/eigen: plan_impl.hpp); the values and the arena are the backend's memory map.
#pragma once

#include <typex/core/dtype.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace typex::plan {

// Where a value lives while the plan runs.
struct location {
  enum class where : unsigned char { none, arena, input, constant } kind = where::none;
  std::size_t index = 0;               // arena: buffer id; input: the executor's input index
  const any_tensor* tensor = nullptr;  // constant: the folded or lifted tensor
};

// How a value's elements are laid out in its location. contiguous: row-major over its extents.
// strided: a permutation of another value's elements read in place (an absorbed transpose /
// permute: element strides per dim). A backend that blocks channels (NCHWc) adds its layouts here
// and the reorders where a reader needs another; today's backends use these two.
enum class layout : unsigned char { contiguous, strided };

struct value {
  dtype dt = dtype::f32;
  std::vector<index_t> extents;
  location at;                        // (strided: the location of the value it reads)
  layout form = layout::contiguous;
  std::vector<index_t> strides;       // (strided) element strides into `at`
  std::optional<any_tensor> folded;   // computed at planning time

  bool strided() const noexcept { return form == layout::strided; }
  index_t numel() const noexcept {
    index_t n = 1;
    for (index_t e : extents) n *= e;
    return n;
  }
  std::size_t bytes() const noexcept { return static_cast<std::size_t>(numel()) * itemsize(dt); }
};

// What a plan does, for users and tests.
struct report {
  std::size_t steps = 0;            // kernels run per call
  std::size_t folded = 0;           // nodes computed once, at planning time
  std::size_t fused = 0;            // activations (and pools) done in the epilogue of the op before them, and
                                    // second results written by an earlier kernel (a product's bias gradient)
  std::size_t chained = 0;          // pointwise ops computed in the pass of the op before them
  std::size_t views = 0;            // nodes that cost nothing (views, strided matmul operands)
  std::size_t winograd = 0;         // convolutions computed by Winograd's F(2x2, 3x3) (a backend's choice)
  std::size_t large_kernel = 0;     // convolutions whose kernel is larger than their output (a weight gradient's),
                                    // computed as one GEMM over every image (a backend's choice)
  std::size_t outputs_in_place = 0; // outputs a backend's steps write straight into the caller's tensors
  std::size_t arena_bytes = 0;      // the planned peak of intermediate memory
  std::size_t unplanned_bytes = 0;  // what the intermediates would take without sharing
  std::vector<std::string> allocating_ops;  // steps that run an eager kernel (allocate per call)

  std::string to_string() const {
    std::string s = std::to_string(steps) + " steps per call (" + std::to_string(fused) + " fused activations, " +
                    std::to_string(chained) + " pointwise ops chained, " + std::to_string(views) +
                    " views without copies, " + std::to_string(folded) + " nodes folded at planning, " + std::to_string(winograd) + " convolutions by Winograd F(2x2, 3x3)" +
                    (large_kernel != 0 ? ", " + std::to_string(large_kernel) + " large-kernel convolutions as one GEMM" : std::string()) + "); arena " +
                    std::to_string(arena_bytes) + " bytes (" + std::to_string(unplanned_bytes) + " without buffer sharing)";
    if (allocating_ops.empty()) return s + "; no allocation per call";
    s += "; eager kernels (allocating) for:";
    for (const auto& op : allocating_ops) s += " " + op;
    return s;
  }
};

// The arena: one buffer per intermediate (and per step's scratch), each live from the step that
// writes it to the last step that reads it; buffers whose lifetimes do not overlap share memory.
class arena_plan {
 public:
  struct buffer {
    std::size_t bytes, first, last;  // size; the first and last step times that touch it
  };
  static constexpr std::size_t alignment = 64;  // (each buffer starts on a cache line)

  void clear() noexcept {
    buffers_.clear();
    offsets_.clear();
    peak_ = total_ = 0;
  }
  // A buffer of `bytes`, written at time `first`. Returns its id.
  std::size_t add(std::size_t bytes, std::size_t first) {
    buffers_.push_back({bytes, first, first});
    return buffers_.size() - 1;
  }
  void resize(std::size_t id, std::size_t bytes) noexcept { buffers_[id].bytes = bytes; }
  // A read of `at` at time t: extends its buffer's life (inputs and constants live throughout).
  void read(const location& at, std::size_t t) noexcept {
    if (at.kind == location::where::arena) buffers_[at.index].last = std::max(buffers_[at.index].last, t);
  }

  // Greedy by size: each buffer at the lowest offset that overlaps no placed buffer live at the
  // same time. Sets offsets(), peak() (the arena's size) and total() (without sharing).
  void assign_offsets() {
    std::vector<std::size_t> order(buffers_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return buffers_[a].bytes > buffers_[b].bytes; });
    offsets_.assign(buffers_.size(), 0);
    std::vector<std::size_t> placed;
    std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) in bytes
    peak_ = total_ = 0;
    for (std::size_t i : order) {
      const buffer& b = buffers_[i];
      const std::size_t size = round(b.bytes);
      total_ += size;
      busy.clear();
      for (std::size_t j : placed) {
        const buffer& o = buffers_[j];
        if (o.first <= b.last && b.first <= o.last) busy.emplace_back(offsets_[j], offsets_[j] + round(o.bytes));
      }
      std::sort(busy.begin(), busy.end());
      std::size_t at = 0;
      for (const auto& [lo, hi] : busy) {
        if (at + size <= lo) break;
        at = std::max(at, hi);
      }
      offsets_[i] = at;
      peak_ = std::max(peak_, at + size);
      placed.push_back(i);
    }
  }

  const std::vector<buffer>& buffers() const noexcept { return buffers_; }
  const std::vector<std::size_t>& offsets() const noexcept { return offsets_; }
  std::size_t offset(std::size_t id) const noexcept { return offsets_[id]; }
  std::size_t peak() const noexcept { return peak_; }
  std::size_t total() const noexcept { return total_; }

 private:
  static std::size_t round(std::size_t b) noexcept { return (b + alignment - 1) / alignment * alignment; }
  std::vector<buffer> buffers_;
  std::vector<std::size_t> offsets_;
  std::size_t peak_ = 0, total_ = 0;
};

}  // namespace typex::plan
