#pragma once
// The exact semantics of each collective (collective.h), written as plain loops with no
// schedule: what every algorithm's functional run must reproduce.

#include <cstdint>

#include "sim/collectives/collective.h"
#include "sim/collectives/functional.h"

namespace podsim::sim {

// Outputs of `spec` on `num_partitions` partitions for `inputs` (spec.elements each). Validates
// the spec like BuildSchedule.
PartitionBuffers ReferenceCollective(const CollectiveSpec& spec, int64_t num_partitions,
                                     const PartitionBuffers& inputs);

}  // namespace podsim::sim
