#include "partitioner/annotations.h"

#include <string>
#include <unordered_set>

#include "ir/error.h"

namespace podsim::partitioner {

namespace {

using ir::Instruction;
using Kind = Sharding::Kind;

std::string Describe(const Instruction& x) {
  std::string where = "%" + x.name;
  if (x.parent) where = "computation %" + x.parent->name() + ", instruction " + where;
  return where;
}

[[noreturn]] void Fail(const Instruction& x, const std::string& what) {
  throw Error(Describe(x) + ": " + what);
}

// Checks that need no device count: shape rank, tile counts, repeats, negative ids.
void CheckForm(const Instruction& x, const Sharding& s, const std::string& call) {
  if (s.kind == Kind::kManual) {
    Fail(x, call + ": {manual} needs AutoToManual/ManualToAuto, which the IR does not have yet");
  }
  if (s.kind == Kind::kMaximal && s.device < 0) {
    Fail(x, call + ": maximal device " + std::to_string(s.device) + " is negative");
  }
  if (s.kind != Kind::kTiled && s.kind != Kind::kReplicated && x.shape.is_tuple) {
    Fail(x, call + ": tuple-shaped " + x.shape.ToString() + " can only be {replicated}");
  }
  if (s.kind != Kind::kTiled) return;
  if (x.shape.is_tuple) {
    Fail(x, call + ": cannot tile tuple-shaped " + x.shape.ToString());
  }
  const int64_t rank = x.shape.rank();
  const int64_t expected = rank + (s.last_tile_dim_replicate ? 1 : 0);
  if (static_cast<int64_t>(s.tile_dims.size()) != expected) {
    Fail(x, call + ": " + std::to_string(s.tile_dims.size()) + " tile dims for shape " +
                x.shape.ToString() + ", which needs " + std::to_string(expected) +
                (s.last_tile_dim_replicate ? " (one per dim plus the replicated one)"
                                           : " (one per dim)"));
  }
  int64_t count = 1;
  for (size_t d = 0; d < s.tile_dims.size(); ++d) {
    if (s.tile_dims[d] < 1) {
      Fail(x, call + ": tile dim " + std::to_string(d) + " is " + std::to_string(s.tile_dims[d]) +
                  ", must be >= 1");
    }
    count *= s.tile_dims[d];
  }
  if (count != static_cast<int64_t>(s.devices.size())) {
    Fail(x, call + ": tile dims " + ir::DimsToString(s.tile_dims) + " need " +
                std::to_string(count) + " devices, " + std::to_string(s.devices.size()) +
                " given");
  }
  std::unordered_set<int64_t> seen;
  for (int64_t dev : s.devices) {
    if (dev < 0) Fail(x, call + ": device " + std::to_string(dev) + " is negative");
    if (!seen.insert(dev).second) {
      Fail(x, call + ": device " + std::to_string(dev) + " appears twice in " + s.ToString());
    }
  }
}

Instruction* Set(Instruction* x, const Sharding& s, const std::string& call) {
  if (x == nullptr) throw Error(call + ": null instruction");
  CheckForm(*x, s, call);
  if (x->sharding && *x->sharding != s) {
    Fail(*x, call + ": contradictory annotations: already " + x->sharding->ToString() +
                ", now " + s.ToString());
  }
  x->sharding = s;
  return x;
}

}  // namespace

Instruction* Split(Instruction* x, int64_t dim, int64_t n) {
  const std::string call = "Split(dim=" + std::to_string(dim) + ", n=" + std::to_string(n) + ")";
  if (x == nullptr) throw Error(call + ": null instruction");
  if (x->shape.is_tuple) Fail(*x, call + ": cannot split tuple-shaped " + x->shape.ToString());
  if (dim < 0 || dim >= x->shape.rank()) {
    Fail(*x, call + ": dim " + std::to_string(dim) + " out of range for " + x->shape.ToString());
  }
  if (n < 1) Fail(*x, call + ": n must be >= 1");
  std::vector<int64_t> tiles(x->shape.rank(), 1);
  tiles[dim] = n;
  std::vector<int64_t> devices(n);
  for (int64_t k = 0; k < n; ++k) devices[k] = k;
  return Set(x, Sharding::Tiled(std::move(tiles), std::move(devices)), call);
}

Instruction* Replicate(Instruction* x) { return Set(x, Sharding::Replicated(), "Replicate"); }

Instruction* Shard(Instruction* x, std::vector<int64_t> tile_dims, std::vector<int64_t> devices,
                   bool last_tile_dim_replicate) {
  return Set(x,
             Sharding::Tiled(std::move(tile_dims), std::move(devices), last_tile_dim_replicate),
             "Shard");
}

Instruction* Annotate(Instruction* x, const Sharding& s) { return Set(x, s, "Annotate"); }

void ValidateShardings(const ir::Module& module, int64_t num_devices) {
  if (num_devices < 1) {
    throw Error("module '" + module.name() + "': the mesh must have >= 1 device, got " +
                std::to_string(num_devices));
  }
  const std::string mesh = " the mesh has " + std::to_string(num_devices) + " device(s)";
  for (const auto& comp : module.computations()) {
    for (const auto& owned : comp->instructions()) {
      const Instruction& x = *owned;
      if (!x.sharding) continue;
      const Sharding& s = *x.sharding;
      CheckForm(x, s, "sharding " + s.ToString());
      if (s.kind == Kind::kMaximal && s.device >= num_devices) {
        Fail(x, "sharding " + s.ToString() + " names device " + std::to_string(s.device) +
                    " but" + mesh);
      }
      if (s.kind != Kind::kTiled) continue;
      for (size_t d = 0; d < s.tile_dims.size(); ++d) {
        if (s.tile_dims[d] > num_devices) {
          const bool rep = s.last_tile_dim_replicate && d + 1 == s.tile_dims.size();
          Fail(x, "sharding " + s.ToString() + (rep ? " replicates " : " splits dim " +
                  std::to_string(d) + " into ") + std::to_string(s.tile_dims[d]) +
                  (rep ? " ways" : " parts") + " but" + mesh);
        }
      }
      if (NumTiles(s) > num_devices) {
        Fail(x, "sharding " + s.ToString() + " needs " + std::to_string(NumTiles(s)) +
                    " devices but" + mesh);
      }
      for (int64_t dev : s.devices) {
        if (dev >= num_devices) {
          Fail(x, "sharding " + s.ToString() + " names unknown device " + std::to_string(dev) +
                      ";" + mesh + " (0.." + std::to_string(num_devices - 1) + ")");
        }
      }
    }
  }
}

void ValidateShardings(const ir::Module& module, const DeviceMesh& mesh) {
  ValidateShardings(module, mesh.num_devices());
}

}  // namespace podsim::partitioner
