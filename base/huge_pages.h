#pragma once
// An allocator for the few arrays a simulation grows to hundreds of megabytes (the packet
// model's packets, streams and paths): an allocation of 2 MiB or more is 2 MiB-aligned and
// marked for transparent huge pages (madvise MADV_HUGEPAGE), so the kernel maps it 2 MiB at a
// time instead of 4 KiB. On a virtual machine each page fault is a costly exit: an 8 MiB
// all-to-all on a 32x32 torus touches 400 MB, 100,000 faults with 4 KiB pages and a few
// hundred with huge pages. Where the kernel has transparent huge pages off, the advice is
// ignored and the memory is ordinary. Smaller allocations are plain malloc.
//
//   std::vector<Packet, HugePageAllocator<Packet>> packets;

#include <cstddef>
#include <limits>
#include <new>

namespace podsim {

// `bytes` of memory, huge-page advised when bytes >= 2 MiB; throws std::bad_alloc.
void* AllocateMaybeHuge(size_t bytes);
void FreeMaybeHuge(void* p) noexcept;

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit
  T* allocate(size_t n) {
    if (n > std::numeric_limits<size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(AllocateMaybeHuge(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) noexcept { FreeMaybeHuge(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace podsim
