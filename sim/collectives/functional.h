#pragma once
// The functional run: executes a Schedule on real float buffers, so a wrong ring or a missing
// dependency is caught by numbers (compare with ReferenceCollective, reference.h).

#include <cstdint>
#include <vector>

#include "sim/collectives/schedule.h"

namespace podsim::sim {

// One float vector per partition.
using PartitionBuffers = std::vector<std::vector<float>>;

// Runs `schedule` on `inputs` (inputs[p] has schedule.input_elements[p] values) and returns the
// outputs (outputs start as zeros, scratch as NaN). order_seed == 0: transfers run in schedule
// order; otherwise in a random topological order of the deps drawn from the seed (a race-free
// schedule gives the same result for every order). Throws podsim::Error for inputs of the wrong
// size or a transfer outside its buffers.
PartitionBuffers RunFunctional(const Schedule& schedule, const PartitionBuffers& inputs,
                               uint64_t order_seed = 0);

}  // namespace podsim::sim
