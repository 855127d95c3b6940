#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>

namespace podsim {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void* AllocateMaybeHuge(size_t bytes) {
  if (bytes < kHugePage) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  if (rounded < bytes) throw std::bad_alloc();  // wrapped
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
  // Advice only: a kernel without transparent huge pages refuses it, and the memory is fine.
  (void)madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void FreeMaybeHuge(void* p) noexcept { std::free(p); }

}  // namespace podsim
