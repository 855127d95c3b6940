#pragma once
// The MPMD baseline, for comparison with the SPMD lowering only (GShard section 3.3: "MPMD ...
// the compilation time grows linearly with the number of partitions"). It emits one program per
// device instead of one for all:
//
//   - shapes are that device's static (padded shard) shapes, the same as the SPMD program's;
//   - there is no partition-id: it is the device's number, and the partition-id arithmetic of
//     the SPMD program (tile offsets, per-partition tables, padding masks' starts) is folded
//     into constants; tables that only served that arithmetic disappear;
//   - every collective becomes explicit point-to-point transfers with the members of the
//     device's replica group. A transfer is a collective-permute with the pairs
//     {{self, peer}, {peer, self}}: on this device it sends its operand to `peer` and yields
//     what `peer` sent (the matching instruction sits in peer's program). An all-gather over k
//     devices is k - 1 such exchanges and a concatenate; an all-reduce k - 1 exchanges and k - 1
//     reductions (in group order, as the SPMD collective folds them); a reduce-scatter and an
//     all-to-all slice their blocks first (k - 1 slices); a collective-permute one exchange per
//     peer, or a one-pair permute when the device only sends or only receives.
//
// So each device's program grows with its group sizes (all-to-all over G devices: ~3G
// instructions) and the whole MPMD output grows as D times that. It is produced by lowering to
// SPMD once and specializing that program for every device; partition time is dominated by the
// D specializations, as it would be by D per-device lowerings.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ir/module.h"
#include "partitioner/spmd_partitioner.h"

namespace podsim::partitioner {

struct MpmdOptions {
  // Devices (partitions); >= 1.
  int64_t num_partitions = 1;
  // Passed to the SPMD lowering the programs are specialized from.
  PartitionOptions spmd;
  // Keep every device's program in MpmdResult::programs. Off: each is counted, handed to
  // `on_program` and dropped (the programs together grow as D^2 for all-to-all layers).
  bool keep_programs = false;
  // Called with each device's program as it is made (may be empty).
  std::function<void(int64_t device, const ir::Module& program)> on_program;
  // Stop after the device whose program ends past this many wall seconds from the start; 0 =
  // no limit. The result then says how far it got.
  double time_budget_seconds = 0;
};

struct MpmdResult {
  int64_t num_partitions = 1;
  // Instructions over all device programs made (all of them when `complete`).
  int64_t instructions = 0;
  // Point-to-point transfer instructions among them.
  int64_t transfers = 0;
  // Devices whose program was made; < num_partitions when the time budget ran out.
  int64_t devices_done = 0;
  bool complete() const { return devices_done == num_partitions; }
  // Device d's program at index d, when MpmdOptions::keep_programs.
  std::vector<std::unique_ptr<ir::Module>> programs;
};

// The MPMD programs of `module` (every instruction sharded, as after PropagateShardings).
// Throws podsim::Error like PartitionSpmd.
MpmdResult PartitionMpmd(const ir::Module& module, const MpmdOptions& options);

// Device `device`'s program from an SPMD program for `num_partitions` partitions (see above).
// `transfers`, when not null, is increased by the point-to-point transfers it contains.
std::unique_ptr<ir::Module> SpecializeForDevice(const ir::Module& spmd, int64_t device,
                                                int64_t num_partitions,
                                                int64_t* transfers = nullptr);

}  // namespace podsim::partitioner
