#include "models/moe_stack.h"

#include <string>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "models/layer_mesh.h"
#include "partitioner/annotations.h"

namespace podsim::models {

std::unique_ptr<ir::Module> BuildMoeStack(const MoeLayerConfig& c,
                                          int64_t num_layer_pairs) {
  models::ValidateMoeConfig(c);
  if (num_layer_pairs < 1) {
    throw Error("moe stack: layer pairs must be >= 1, got " + std::to_string(num_layer_pairs));
  }
  auto module = std::make_unique<ir::Module>("moe_stack_" + std::to_string(2 * num_layer_pairs));
  ir::Builder b(module->AddComputation("main", /*is_entry=*/true));
  int64_t next_parameter = 0;
  ir::Instruction* x = b.Parameter(
      next_parameter++, ir::Shape(c.dtype, {c.num_groups, c.tokens_per_group, c.d_model}), "x");
  AnnotateBatch(x, c);
  for (int64_t pair = 0; pair < num_layer_pairs; ++pair) {
    ir::Instruction* y = models::AddSelfAttention(b, x, &next_parameter, c);
    ir::Instruction* z = models::AddDenseFfn(b, y, &next_parameter, c);
    ir::Instruction* u =
        c.moe_layer_attention ? models::AddSelfAttention(b, z, &next_parameter, c) : z;
    x = models::AddMoeSublayer(b, u, &next_parameter, c);
  }
  ir::Verify(*module);
  return module;
}

}  // namespace podsim::models
