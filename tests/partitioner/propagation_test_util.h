#pragma once
// Shared by the propagation tests: a module under construction, and a propagation run wrapped
// in the checks every test wants (verifier before and after, every instruction sharded).

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "partitioner/annotations.h"
#include "partitioner/propagation.h"

namespace podsim::partitioner::testing {

struct ModuleFixture {
  std::unique_ptr<ir::Module> m = std::make_unique<ir::Module>("t");
  ir::Computation* c = m->AddComputation("main", true);
  ir::Builder b{c};

  ir::Instruction* Param(std::vector<int64_t> dims, const std::string& name,
                         ir::DType dtype = ir::DType::kF32) {
    return b.Parameter(static_cast<int64_t>(c->parameters().size()), ir::Shape(dtype, dims),
                       name);
  }
};

// Verifies, propagates over `num_devices`, verifies again, and checks every instruction has a
// sharding. Returns PropagateShardings' result.
inline bool Propagate(ir::Module& m, int64_t num_devices, const PropagationOptions& options = {}) {
  ir::Verify(m);
  const bool changed = PropagateShardings(m, num_devices, options);
  ir::Verify(m);
  for (const auto& comp : m.computations()) {
    for (const auto& x : comp->instructions()) {
      CHECK_MESSAGE(x->sharding.has_value(), "%" << x->name << " has no sharding");
    }
  }
  return changed;
}

// The sharding's text with the devices listed ("{devices=[2,2]0,2,1,3}" also for the iota form
// "{devices=[2,2]<=[2,2]T(1,0)}"), so that expectations name the devices whatever form
// propagation keeps; "{none}" when unset.
inline std::string Listed(ir::Sharding s) {
  if (s.kind == ir::Sharding::Kind::kTiled) s.devices = s.devices.ToVector();
  return s.ToString();
}
inline std::string S(const ir::Instruction* x) {
  return x->sharding ? Listed(*x->sharding) : "{none}";
}

}  // namespace podsim::partitioner::testing
