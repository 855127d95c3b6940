#pragma once
// The logical device mesh the MoE models' annotations use: D = data x expert x model devices,
// device (i, j, k) = (i * expert + j) * model + k, so the model axis is innermost (a chip's
// cores, then its nearest neighbours) and the data axis outermost.
//
//   model   (tensor parallelism, Megatron style) attention heads, the dense FFN's hidden dim and
//           every expert's hidden dim split `model` ways; activations replicated over it, so each
//           attention block and FFN ends with an AllReduce of its partial sums over the model
//           axis.
//   expert  the experts split `expert` ways: dispatch and combine are AllToAlls within a group
//           of `expert` devices (the same data and model coordinates).
//   data    groups split over data x expert (each device holds G / (data x expert) groups);
//           expert weights are replicated over data, so their gradients are AllReduced over it.
// The paper's layout is data = model = 1, expert = D: groups and experts both split D ways.
//
//   LayerMesh mesh = MeshOf(config);    // {data, expert, model} from the config's fields
//   AnnotateBatch(x, config);           // [G, ...]: G over data x expert, replicated over model

#include <cstdint>
#include <vector>

#include "ir/instruction.h"
#include "ir/sharding.h"
#include "models/moe_transformer.h"

namespace podsim::models {

struct LayerMesh {
  int64_t data = 1, expert = 1, model = 1;
};

// The mesh of a config: model = model_parallel, expert = expert_parallel (0: D / model),
// data = D / (expert x model). Throws podsim::Error naming the field when they do not divide D.
LayerMesh MeshOf(const MoeLayerConfig& config);

enum class MeshAxis : uint8_t { kData, kExpert, kModel };

// The sharding of a rank-`rank` tensor whose dims split over mesh axes as `splits` says (dim ->
// axes, major first; a dim not listed is whole) and replicated over the axes not used. Axes of
// size 1 are dropped; a tensor split over none is {replicated}. The device order is always an
// iota form (ir/iota.h).
struct DimAxes {
  int64_t dim = 0;
  std::vector<MeshAxis> axes;
};
ir::Sharding MeshSharding(const LayerMesh& mesh, int64_t rank, const std::vector<DimAxes>& splits);

// Annotations of the MoE models; each returns x and does nothing unless config.annotate.
// Tokens and activations: dim `dim` (G) over data x expert, replicated over model.
ir::Instruction* AnnotateBatch(ir::Instruction* x, const MoeLayerConfig& config, int64_t dim = 0);
// A dense weight: dim `model_dim` over the model axis (-1: replicated), replicated elsewhere.
ir::Instruction* AnnotateModel(ir::Instruction* x, const MoeLayerConfig& config, int64_t model_dim);
// An expert weight or stack (only with annotate_experts): `expert_dim` over expert and
// `hidden_dim` (-1: none) over model, replicated over data.
ir::Instruction* AnnotateExperts(ir::Instruction* x, const MoeLayerConfig& config,
                                 int64_t expert_dim, int64_t hidden_dim);
// The dispatched expert inputs [E, G, C, M]: E over expert, G over data, replicated over model.
// (The expert outputs, transposed back to [G, E, C, M], take AnnotateBatch.)
ir::Instruction* AnnotateDispatched(ir::Instruction* x, const MoeLayerConfig& config);

}  // namespace podsim::models
