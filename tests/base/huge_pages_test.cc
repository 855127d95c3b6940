// base/huge_pages.h: large allocations are 2 MiB aligned and usable, small ones plain; a vector
// with the allocator behaves as a vector.

#include "base/huge_pages.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace podsim {
namespace {

TEST_CASE("huge pages: an allocation of 2 MiB or more starts on a 2 MiB boundary") {
  constexpr size_t kTwoMiB = size_t{2} << 20;
  for (size_t bytes : {kTwoMiB, kTwoMiB + 1, 5 * kTwoMiB + 12345}) {
    CAPTURE(bytes);
    void* p = AllocateMaybeHuge(bytes);
    CHECK(reinterpret_cast<uintptr_t>(p) % kTwoMiB == 0);
    std::memset(p, 0xab, bytes);  // every byte is ours (ASan checks the bounds)
    CHECK(static_cast<unsigned char*>(p)[bytes - 1] == 0xab);
    FreeMaybeHuge(p);
  }
  void* small = AllocateMaybeHuge(100);
  std::memset(small, 1, 100);
  FreeMaybeHuge(small);
  CHECK_THROWS_AS(HugePageAllocator<int64_t>().allocate(SIZE_MAX / 4), std::bad_array_new_length);
}

TEST_CASE("huge pages: a vector with the allocator grows past 2 MiB and keeps its values") {
  std::vector<int64_t, HugePageAllocator<int64_t>> v;
  for (int64_t i = 0; i < 1'000'000; ++i) v.push_back(i);  // 8 MB
  CHECK(v.size() == 1'000'000);
  // 0 + 1 + ... + (n - 1) = n (n - 1) / 2.
  CHECK(std::accumulate(v.begin(), v.end(), int64_t{0}) == int64_t{1'000'000} * 999'999 / 2);
  CHECK(v[999'999] == 999'999);
}

}  // namespace
}  // namespace podsim
