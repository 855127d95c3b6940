#include "partitioner/annotations.h"

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"

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
  if (s.kind == Kind::kMaximal && s.device < 0) {
    Fail(x, call + ": maximal device " + std::to_string(s.device) + " is negative");
  }
  if (s.kind == Kind::kMaximal && x.shape.is_tuple) {
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
  if (count != s.devices.size()) {
    Fail(x, call + ": tile dims " + ir::DimsToString(s.tile_dims) + " need " +
                std::to_string(count) + " devices, " + std::to_string(s.devices.size()) +
                " given");
  }
  if (s.devices.is_iota()) return;  // 0..N-1 once each by construction
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
  if (s.kind == Kind::kManual) {
    Fail(*x, call + ": {manual} comes from AutoToManual, not from an annotation");
  }
  CheckForm(*x, s, call);
  if (x->sharding && *x->sharding != s) {
    Fail(*x, call + ": contradictory annotations: already " + x->sharding->ToString() +
                ", now " + s.ToString());
  }
  if (!x->sharding) x->sharding = s;  // a repeat keeps the first spelling (iota or list)
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
  return Set(x, Sharding::TiledIota(std::move(tiles)), call);
}

Instruction* Replicate(Instruction* x) { return Set(x, Sharding::Replicated(), "Replicate"); }

Instruction* Shard(Instruction* x, std::vector<int64_t> tile_dims, std::vector<int64_t> devices,
                   bool last_tile_dim_replicate) {
  return Set(x,
             Sharding::Tiled(std::move(tile_dims), std::move(devices), last_tile_dim_replicate),
             "Shard");
}

Instruction* Annotate(Instruction* x, const Sharding& s) { return Set(x, s, "Annotate"); }

namespace {

// The checks of ValidateShardings for one sharding (`what`: "sharding" or "tiling").
void CheckOnMesh(const Instruction& x, const Sharding& s, const std::string& what,
                 int64_t num_devices) {
  const std::string mesh = " the mesh has " + std::to_string(num_devices) + " device(s)";
  const std::string name = what + " " + s.ToString();
  CheckForm(x, s, name);
  if (s.kind == Kind::kMaximal && s.device >= num_devices) {
    Fail(x, name + " names device " + std::to_string(s.device) + " but" + mesh);
  }
  if (s.kind != Kind::kTiled) return;
  for (size_t d = 0; d < s.tile_dims.size(); ++d) {
    if (s.tile_dims[d] > num_devices) {
      const bool rep = s.last_tile_dim_replicate && d + 1 == s.tile_dims.size();
      Fail(x, name + (rep ? " replicates " : " splits dim " + std::to_string(d) + " into ") +
                  std::to_string(s.tile_dims[d]) + (rep ? " ways" : " parts") + " but" + mesh);
    }
  }
  if (NumTiles(s) > num_devices) {
    Fail(x, name + " needs " + std::to_string(NumTiles(s)) + " devices but" + mesh);
  }
  if (s.devices.is_iota()) {
    const int64_t last = s.devices.size() - 1;
    if (last >= num_devices) {
      Fail(x, name + " names unknown device " + std::to_string(last) + ";" + mesh + " (0.." +
                  std::to_string(num_devices - 1) + ")");
    }
  } else {
    for (int64_t dev : s.devices) {
      if (dev >= num_devices) {
        Fail(x, name + " names unknown device " + std::to_string(dev) + ";" + mesh + " (0.." +
                    std::to_string(num_devices - 1) + ")");
      }
    }
  }
  // Every partition runs the same program, so a tiling must say what each one holds: one that
  // leaves devices out (Split(x, d, n) with n < D) is ambiguous. Partial replication says it.
  if (NumTiles(s) < num_devices) {
    std::string hint;
    if (num_devices % NumTiles(s) == 0 && !s.last_tile_dim_replicate) {
      std::vector<int64_t> tiles = s.tile_dims;
      tiles.push_back(num_devices / NumTiles(s));
      hint = "; to replicate each tile " + std::to_string(tiles.back()) +
             " ways, add a replicated tile dim of " + std::to_string(tiles.back()) +
             " over all " + std::to_string(num_devices) + " devices, e.g. " +
             Sharding::TiledIota(tiles, true).ToString();
    }
    Fail(x, name + " covers " + std::to_string(NumTiles(s)) + " device(s) but" + mesh +
                "; a tiling must cover every device" + hint);
  }
}

}  // namespace

Instruction* AutoToManual(ir::Builder& b, Instruction* x, const Sharding& tiling) {
  if (x == nullptr) throw Error("AutoToManual: null instruction");
  CheckForm(*x, tiling, "AutoToManual tiling " + tiling.ToString());
  return b.AutoToManual(x, tiling);
}

Instruction* ManualToAuto(ir::Builder& b, Instruction* y, const Sharding& tiling,
                          std::vector<int64_t> full_dims) {
  if (y == nullptr) throw Error("ManualToAuto: null instruction");
  return b.ManualToAuto(y, tiling, std::move(full_dims));
}

std::unordered_set<const Instruction*> ManualRegion(const ir::Module& module) {
  std::unordered_set<const Instruction*> region;
  std::unordered_set<const ir::Computation*> manual_bodies;
  // Until nothing changes: a body whose loop turns out manual is marked on a later pass.
  for (size_t before = 1; before != region.size() + manual_bodies.size();) {
    before = region.size() + manual_bodies.size();
    for (const auto& comp : module.computations()) {
      const bool whole = manual_bodies.count(comp.get()) > 0;
      for (const auto& owned : comp->instructions()) {
        const Instruction* x = owned.get();
        bool manual = whole || x->opcode == ir::Opcode::kAutoToManual;
        if (x->opcode != ir::Opcode::kManualToAuto) {
          for (const Instruction* o : x->operands) manual = manual || region.count(o) > 0;
        }
        if (!manual) continue;
        region.insert(x);
        if (x->opcode == ir::Opcode::kLoop && x->body) manual_bodies.insert(x->body);
      }
    }
  }
  // Values only the region reads (its partition-id arithmetic, constants) are per-partition
  // code too; an auto-to-manual's operand and parameters stay outside.
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> users;
  for (const auto& comp : module.computations()) {
    for (const auto& owned : comp->instructions()) {
      for (const Instruction* o : owned->operands) users[o].push_back(owned.get());
    }
  }
  for (const auto& comp : module.computations()) {
    const auto& instrs = comp->instructions();
    for (size_t n = instrs.size(); n-- > 0;) {
      const Instruction* x = instrs[n].get();
      if (region.count(x) || x->opcode == ir::Opcode::kParameter || x == comp->root()) continue;
      auto it = users.find(x);
      if (it == users.end()) continue;
      bool inside = true;
      for (const Instruction* u : it->second) {
        inside = inside && region.count(u) && u->opcode != ir::Opcode::kAutoToManual;
      }
      if (inside) region.insert(x);
    }
  }
  return region;
}

bool IsolateRegionPartitionIds(ir::Module& module) {
  const std::unordered_set<const Instruction*> region = ManualRegion(module);
  if (region.empty()) return false;
  bool changed = false;
  for (const auto& comp : module.computations()) {
    // Id values: outside the region, computed from partition-id and constants alone.
    std::unordered_set<const Instruction*> pure, id;
    std::vector<Instruction*> order;
    for (const auto& owned : comp->instructions()) {
      Instruction* x = owned.get();
      if (region.count(x) || x->opcode == ir::Opcode::kParameter || x->body != nullptr) continue;
      bool all_pure = true, from_id = x->opcode == ir::Opcode::kPartitionId;
      for (const Instruction* o : x->operands) {
        all_pure = all_pure && pure.count(o) > 0;
        from_id = from_id || id.count(o) > 0;
      }
      if (!all_pure) continue;
      pure.insert(x);
      if (from_id) {
        id.insert(x);
        order.push_back(x);
      }
    }
    // Clones of the id values the region reads, and of what they are computed from.
    std::unordered_map<const Instruction*, Instruction*> clone;
    std::function<Instruction*(Instruction*)> region_copy = [&](Instruction* x) -> Instruction* {
      if (!id.count(x)) return x;  // a constant: the same everywhere
      auto it = clone.find(x);
      if (it != clone.end()) return it->second;
      std::vector<Instruction*> ops;
      for (Instruction* o : x->operands) ops.push_back(region_copy(o));
      auto c = std::make_unique<Instruction>(*x);
      c->name = x->name + ".manual";
      c->operands = ops;
      c->sharding.reset();
      // After x and after its cloned operands (each placed right after its original, which
      // precedes x).
      Instruction* added = comp->InsertAfter(x, std::move(c));
      clone[x] = added;
      changed = true;
      return added;
    };
    // Only values the auto program reads too need a clone; ManualRegion takes in the others.
    std::unordered_set<const Instruction*> read_outside = {comp->root()};
    for (const auto& owned : comp->instructions()) {
      if (region.count(owned.get())) continue;
      for (const Instruction* o : owned->operands) read_outside.insert(o);
    }
    std::vector<Instruction*> users;
    for (const auto& owned : comp->instructions()) {
      if (region.count(owned.get()) && owned->opcode != ir::Opcode::kAutoToManual) {
        users.push_back(owned.get());
      }
    }
    for (Instruction* u : users) {
      for (Instruction*& o : u->operands) {
        if (id.count(o) && read_outside.count(o)) o = region_copy(o);
      }
    }
  }
  return changed;
}

void ValidateShardings(const ir::Module& module, int64_t num_devices) {
  if (num_devices < 1) {
    throw Error("module '" + module.name() + "': the mesh must have >= 1 device, got " +
                std::to_string(num_devices));
  }
  const std::unordered_set<const Instruction*> region = ManualRegion(module);
  for (const auto& comp : module.computations()) {
    for (const auto& owned : comp->instructions()) {
      const Instruction& x = *owned;
      const bool manual = region.count(&x) > 0;
      if (x.tiling) {
        CheckOnMesh(x, *x.tiling, "tiling", num_devices);
      }
      if (!x.sharding) continue;
      const Sharding& s = *x.sharding;
      if (s.kind == Kind::kManual) {
        if (!manual) {
          Fail(x, "{manual} outside a manual region (manual values come from auto-to-manual)");
        }
        continue;
      }
      if (manual) {
        Fail(x, "contradictory annotations: in a manual region (computed from an "
                "auto-to-manual) but sharded " + s.ToString());
      }
      CheckOnMesh(x, s, "sharding", num_devices);
    }
  }
}

void ValidateShardings(const ir::Module& module, const DeviceMesh& mesh) {
  ValidateShardings(module, mesh.num_devices());
}

}  // namespace podsim::partitioner
