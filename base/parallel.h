#pragma once
// Independent work items on a few threads: the points of a sweep, which share nothing (each
// builds its own topology, schedule and network model) and differ 100x in cost.

#include <cstddef>
#include <functional>

namespace podsim {

// `jobs` if > 0, else the machine's hardware threads (at least 1).
int ResolveJobs(int jobs);

// Runs body(0) .. body(n - 1) on up to ResolveJobs(jobs) threads, each thread claiming the next
// unclaimed index when it is free (so a long item does not hold up the rest). Returns when
// every claimed item has run. If bodies threw, no further index is claimed and the exception
// of the lowest index that threw is rethrown (with one job: the first, as a plain loop would).
// The caller stores results by index and synchronises anything the bodies share.
void ParallelFor(size_t n, int jobs, const std::function<void(size_t)>& body);

}  // namespace podsim
