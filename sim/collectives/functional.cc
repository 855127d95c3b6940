#include "sim/collectives/functional.h"

#include <limits>
#include <random>
#include <string>

#include "base/error.h"

namespace podsim::sim {
namespace {

// Transfer indices in a random topological order of the deps.
std::vector<int64_t> RandomOrder(const Schedule& schedule, uint64_t seed) {
  const size_t n = schedule.transfers.size();
  std::vector<int64_t> remaining(n);
  std::vector<std::vector<int64_t>> successors(n);
  for (size_t i = 0; i < n; ++i) {
    remaining[i] = schedule.transfers[i].num_deps;
    for (int64_t d : Deps(schedule, i))
      successors[static_cast<size_t>(d)].push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> ready, order;
  for (size_t i = 0; i < n; ++i) {
    if (remaining[i] == 0) ready.push_back(static_cast<int64_t>(i));
  }
  std::mt19937_64 rng(seed);
  while (!ready.empty()) {
    const size_t pick = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    const int64_t t = ready[pick];
    ready[pick] = ready.back();
    ready.pop_back();
    order.push_back(t);
    for (int64_t s : successors[static_cast<size_t>(t)]) {
      if (--remaining[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  if (order.size() != n) throw Error("schedule: the dependencies have a cycle");
  return order;
}

}  // namespace

PartitionBuffers RunFunctional(const Schedule& schedule, const PartitionBuffers& inputs,
                               uint64_t order_seed) {
  const size_t np = static_cast<size_t>(schedule.num_partitions);
  if (inputs.size() != np) {
    throw Error("inputs: expected " + std::to_string(np) + " partitions, got " +
                std::to_string(inputs.size()));
  }
  for (size_t p = 0; p < np; ++p) {
    if (static_cast<int64_t>(inputs[p].size()) != schedule.input_elements[p]) {
      throw Error("inputs[" + std::to_string(p) + "]: expected " +
                  std::to_string(schedule.input_elements[p]) + " elements, got " +
                  std::to_string(inputs[p].size()));
    }
  }
  PartitionBuffers output(np), scratch(np);
  for (size_t p = 0; p < np; ++p) {
    output[p].assign(static_cast<size_t>(schedule.output_elements[p]), 0.0f);
    if (!schedule.scratch_elements.empty()) {
      scratch[p].assign(static_cast<size_t>(schedule.scratch_elements[p]),
                        std::numeric_limits<float>::quiet_NaN());
    }
  }
  auto source = [&](int64_t p, Buffer b) -> const std::vector<float>& {
    if (b == Buffer::kInput) return inputs[static_cast<size_t>(p)];
    return b == Buffer::kOutput ? output[static_cast<size_t>(p)] : scratch[static_cast<size_t>(p)];
  };
  auto destination = [&](int64_t p, Buffer b) -> std::vector<float>& {
    return b == Buffer::kOutput ? output[static_cast<size_t>(p)] : scratch[static_cast<size_t>(p)];
  };
  auto run = [&](int64_t index) {
    const ChunkTransfer& t = schedule.transfers[static_cast<size_t>(index)];
    if (t.dst_buffer == Buffer::kInput) {
      throw Error("transfer " + std::to_string(index) + ": writes an input buffer");
    }
    const std::vector<float>& src = source(t.src, t.src_buffer);
    std::vector<float>& dst = destination(t.dst, t.dst_buffer);
    ForEachPiece(schedule, t, [&](int64_t so, int64_t d_off, int64_t len) {
      if (so < 0 || len < 0 || so + len > static_cast<int64_t>(src.size()) || d_off < 0 ||
          d_off + len > static_cast<int64_t>(dst.size())) {
        throw Error("transfer " + std::to_string(index) + ": piece [" + std::to_string(so) + ", +" +
                    std::to_string(len) + ") of " + BufferName(t.src_buffer) + " " +
                    std::to_string(t.src) + " -> [" + std::to_string(d_off) + ", +" +
                    std::to_string(len) + ") of " + BufferName(t.dst_buffer) + " " +
                    std::to_string(t.dst) + " is out of bounds");
      }
      for (int64_t i = 0; i < len; ++i) {
        const float v = src[static_cast<size_t>(so + i)];
        float& out = dst[static_cast<size_t>(d_off + i)];
        out = t.reduce ? out + v : v;
      }
    });
  };
  if (order_seed == 0) {
    for (size_t i = 0; i < schedule.transfers.size(); ++i) run(static_cast<int64_t>(i));
  } else {
    for (int64_t i : RandomOrder(schedule, order_seed)) run(i);
  }
  return output;
}

}  // namespace podsim::sim
