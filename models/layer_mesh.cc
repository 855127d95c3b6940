#include "models/layer_mesh.h"

#include <string>

#include "base/error.h"
#include "ir/iota.h"
#include "partitioner/annotations.h"

namespace podsim::models {

using ir::Instruction;

LayerMesh MeshOf(const MoeLayerConfig& c) {
  const int64_t d = c.num_devices;
  auto fail = [](const char* field, const std::string& what) {
    throw Error(std::string("moe.") + field + ": " + what);
  };
  if (c.model_parallel < 1 || d % c.model_parallel != 0) {
    fail("model_parallel", "must be >= 1 and divide the " + std::to_string(d) + " devices, got " +
                               std::to_string(c.model_parallel));
  }
  const int64_t rest = d / c.model_parallel;
  const int64_t e = c.expert_parallel == 0 ? rest : c.expert_parallel;
  if (e < 1 || rest % e != 0) {
    fail("expert_parallel", "must be >= 1 and divide the " + std::to_string(rest) +
                                " devices per model-parallel slot (" + std::to_string(d) + " / " +
                                std::to_string(c.model_parallel) + "), got " + std::to_string(e));
  }
  return LayerMesh{rest / e, e, c.model_parallel};
}

ir::Sharding MeshSharding(const LayerMesh& mesh, int64_t rank, const std::vector<DimAxes>& splits) {
  auto size = [&](MeshAxis a) {
    return a == MeshAxis::kData ? mesh.data : a == MeshAxis::kExpert ? mesh.expert : mesh.model;
  };
  // Device id digits: data (major), expert, model (minor); reshape dim j is axis j.
  const std::vector<int64_t> reshape = {mesh.data, mesh.expert, mesh.model};
  std::vector<int64_t> tiles(rank, 1), perm;
  bool used[3] = {false, false, false};
  for (int64_t d = 0; d < rank; ++d) {
    for (const DimAxes& s : splits) {
      if (s.dim != d) continue;
      for (MeshAxis a : s.axes) {
        const int j = static_cast<int>(a);
        if (used[j]) throw Error("MeshSharding: a mesh axis splits two dims");
        used[j] = true;
        if (size(a) == 1) continue;
        tiles[d] *= size(a);
        perm.push_back(j);
      }
    }
  }
  if (perm.empty()) return ir::Sharding::Replicated();
  int64_t replicas = 1;
  for (int j = 0; j < 3; ++j) {
    if (!used[j] && reshape[j] > 1) {
      replicas *= reshape[j];
      perm.push_back(j);
    }
  }
  if (replicas > 1) tiles.push_back(replicas);
  // Size-1 axes take no position in the order; give them one at the end (they change nothing).
  for (int j = 0; j < 3; ++j) {
    if (reshape[j] == 1) perm.push_back(j);
  }
  return ir::Sharding::Tiled(std::move(tiles),
                             ir::DeviceList(ir::IotaDevices::Create(reshape, perm)), replicas > 1);
}

Instruction* AnnotateBatch(Instruction* x, const MoeLayerConfig& c, int64_t dim) {
  if (!c.annotate) return x;
  return partitioner::Annotate(
      x, MeshSharding(MeshOf(c), x->shape.rank(), {{dim, {MeshAxis::kData, MeshAxis::kExpert}}}));
}

Instruction* AnnotateModel(Instruction* x, const MoeLayerConfig& c, int64_t model_dim) {
  if (!c.annotate) return x;
  if (model_dim < 0) return partitioner::Replicate(x);
  return partitioner::Annotate(
      x, MeshSharding(MeshOf(c), x->shape.rank(), {{model_dim, {MeshAxis::kModel}}}));
}

Instruction* AnnotateExperts(Instruction* x, const MoeLayerConfig& c, int64_t expert_dim,
                             int64_t hidden_dim) {
  if (!c.annotate || !c.annotate_experts) return x;
  std::vector<DimAxes> splits = {{expert_dim, {MeshAxis::kExpert}}};
  if (hidden_dim >= 0) splits.push_back({hidden_dim, {MeshAxis::kModel}});
  return partitioner::Annotate(x, MeshSharding(MeshOf(c), x->shape.rank(), splits));
}

Instruction* AnnotateDispatched(Instruction* x, const MoeLayerConfig& c) {
  if (!c.annotate) return x;
  return partitioner::Annotate(x, MeshSharding(MeshOf(c), x->shape.rank(),
                                               {{0, {MeshAxis::kExpert}}, {1, {MeshAxis::kData}}}));
}

}  // namespace podsim::models
