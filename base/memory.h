#pragma once
// Memory estimates before large allocations: code about to allocate what its input asks for
// (an interpreter literal, a collective's schedule, a routing table) first asks
// RequireMemory, so that an input too large for this machine is an error naming what needed
// the memory, never a bare std::bad_alloc or an hour of swapping.

#include <cstdint>
#include <string>

namespace podsim {

// The memory this process may use: physical memory, or less when an address-space or data
// limit (ulimit -v / -d) is set.
uint64_t MemoryBudgetBytes();

// Throws podsim::Error "<what> needs <bytes> (<detail>); this machine allows <budget>" when an
// allocation of `bytes` would exceed MemoryBudgetBytes(). `bytes` is a double so that an
// estimate that overflows int64 still compares (and NaN counts as too much).
void RequireMemory(double bytes, const std::string& what);

}  // namespace podsim
