#include "models/moe_loss.h"

#include <string>

#include "base/error.h"
#include "ir/verifier.h"
#include "models/layer_mesh.h"
#include "models/naming.h"
#include "models/scopes.h"
#include "models/top2_gating.h"
#include "partitioner/annotations.h"

namespace podsim::models {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::ReduceKind;
using ir::Shape;

Instruction* AddSoftmaxCrossEntropy(Builder& b, Instruction* logits, Instruction* labels) {
  const int64_t r = logits->shape.rank();
  if (r < 1 || logits->shape.dtype != DType::kF32 || labels->shape.dtype != DType::kS32 ||
      labels->shape.dims != std::vector<int64_t>(logits->shape.dims.begin(),
                                                 logits->shape.dims.end() - 1)) {
    throw Error("softmax cross-entropy: needs f32 logits [.., V] and s32 labels [..], got " +
                logits->shape.ToString() + " and " + labels->shape.ToString());
  }
  std::vector<int64_t> lead(r - 1);
  for (int64_t d = 0; d < r - 1; ++d) lead[d] = d;
  const std::vector<int64_t>& dims = logits->shape.dims;
  // logsumexp = m + log(sum exp(logits - m)), m the max (its gradient cancels exactly).
  Instruction* max = b.Reduce(logits, {r - 1}, ReduceKind::kMax);
  Instruction* shifted = b.Sub(logits, b.Broadcast(max, dims, lead));
  Instruction* lse = b.Add(max, b.Log(b.Reduce(b.Exp(shifted), {r - 1}, ReduceKind::kAdd)));
  Instruction* target =
      b.Reduce(b.Mul(logits, AddOneHot(b, labels, dims.back())), {r - 1}, ReduceKind::kAdd);
  Instruction* nll = b.Sub(lse, target);
  Instruction* total = nll;
  if (r > 1) total = b.Reduce(nll, lead, ReduceKind::kAdd);
  const double count = static_cast<double>(nll->shape.NumElements());
  return b.Div(total, b.ConstantScalar(DType::kF32, count));
}

std::unique_ptr<ir::Module> BuildMoeLayerPairLoss(const MoeLayerConfig& c,
                                                  const MoeLossConfig& loss) {
  ValidateMoeConfig(c);
  if (loss.vocab_size < 1) {
    throw Error("loss.vocab_size: must be >= 1, got " + std::to_string(loss.vocab_size));
  }
  auto module = std::make_unique<ir::Module>("moe_layer_pair_loss");
  Builder b(module->AddComputation("main", /*is_entry=*/true));
  int64_t next_parameter = 0;
  const Shape token_shape(DType::kS32, {c.num_groups, c.tokens_per_group});
  Instruction *x, *embedding, *targets;
  {
    Builder::ScopeGuard scope(b, "embedding");
    Instruction* tokens = b.Parameter(next_parameter++, token_shape, "tokens");
    targets = b.Parameter(next_parameter++, token_shape, "targets");
    embedding = b.Parameter(next_parameter++, Shape(c.dtype, {loss.vocab_size, c.d_model}),
                            "embedding");
    if (c.annotate) {
      AnnotateBatch(tokens, c);
      AnnotateBatch(targets, c);
      partitioner::Replicate(embedding);
    }
    x = Named(b.Gather(embedding, tokens, 0), "x");
    AnnotateBatch(x, c);
  }
  Instruction* y = AddSelfAttention(b, x, &next_parameter, c);
  Instruction* z = AddDenseFfn(b, y, &next_parameter, c);
  Instruction* u = c.moe_layer_attention ? AddSelfAttention(b, z, &next_parameter, c) : z;
  Instruction* aux = nullptr;
  Instruction* out = AddMoeSublayer(b, u, &next_parameter, c, &aux);
  Builder::ScopeGuard scope(b, "softmax");
  Instruction* logits = b.Einsum("GSM,VM->GSV", out, embedding);
  if (logits->shape.dtype != DType::kF32) logits = b.Convert(logits, DType::kF32);
  Named(logits, "logits");
  Instruction* nll = Named(AddSoftmaxCrossEntropy(b, logits, targets), "nll");
  Instruction* weighted =
      b.Mul(b.ConstantScalar(DType::kF32, loss.aux_loss_coefficient), aux);
  b.computation()->set_root(Named(b.Add(nll, weighted), "loss"));
  ir::Verify(*module);
  return module;
}

}  // namespace podsim::models
