#include "ir/shape_inference.h"

#include <set>
#include <string>

#include "base/error.h"
#include "ir/shape_rules.h"

namespace podsim::ir {
namespace internal {

int64_t WindowedExtent(const Checker& c, int64_t in, const WindowDim& w) {
  const char* what = "the window's extent";
  const int64_t dilated_in = in == 0 ? 0 : c.Add(c.Mul(in - 1, w.base_dilation, what), 1, what);
  const int64_t padded = c.Add(c.Add(dilated_in, w.pad_low, what), w.pad_high, what);
  const int64_t dilated_window = c.Add(c.Mul(w.size - 1, w.window_dilation, what), 1, what);
  if (padded < dilated_window) return padded < 0 ? -1 : 0;
  return (padded - dilated_window) / w.stride + 1;
}

void CheckWindow(const Checker& c, const std::vector<WindowDim>& window) {
  for (size_t d = 0; d < window.size(); ++d) {
    const WindowDim& w = window[d];
    c.Require(w.size >= 1 && w.stride >= 1 && w.base_dilation >= 1 && w.window_dilation >= 1,
              "window dim " + std::to_string(d) + ": size, stride and dilations must be >= 1");
  }
}

void CheckReplicaGroups(const Checker& c, const Instruction& i) {
  if (i.iota_replica_groups) {
    const IotaReplicaGroupList& g = *i.iota_replica_groups;
    c.Require(i.replica_groups.empty(), "replica groups given both as a list and as an iota");
    c.Require(g.num_groups >= 1 && g.group_size >= 1 &&
                  c.Mul(g.num_groups, g.group_size, "the replica groups' device count") ==
                      g.devices.size(),
              "replica_groups=" + g.ToString() + ": " + std::to_string(g.num_groups) + " x " +
                  std::to_string(g.group_size) + " does not match the " +
                  std::to_string(g.devices.size()) + " devices");
    return;
  }
  std::set<int64_t> seen;
  size_t size = 0;
  for (size_t g = 0; g < i.replica_groups.size(); ++g) {
    const auto& group = i.replica_groups[g];
    c.Require(!group.empty(), "replica_groups[" + std::to_string(g) + "] is empty");
    if (g == 0) size = group.size();
    c.Require(group.size() == size, "replica groups must all have the same size");
    for (int64_t p : group) {
      c.Require(p >= 0, "replica_groups[" + std::to_string(g) + "] names negative partition " +
                            std::to_string(p));
      c.Require(seen.insert(p).second, "partition " + std::to_string(p) +
                                           " appears twice in replica_groups");
    }
  }
}

int64_t GroupSize(const Instruction& i) { return ReplicaGroupSizeOf(i); }

Shape ShapeRules::DefaultAction(const Instruction& i) { c_.Fail("no shape rule"); }

}  // namespace internal

Shape InferShape(const Instruction& instr) {
  internal::Checker c(instr);
  for (size_t k = 0; k < instr.operands.size(); ++k) {
    if (instr.operands[k] == nullptr) c.Fail("operand " + std::to_string(k) + " is missing");
  }
  internal::ShapeRules rules(instr);
  return Accept<Shape>(instr, rules);
}

}  // namespace podsim::ir
