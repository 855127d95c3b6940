#include "base/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "base/error.h"
#include "base/units.h"

namespace podsim {

uint64_t MemoryBudgetBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  uint64_t budget = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                          : uint64_t{1} << 34;  // 16 GiB when unknown
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit limit {};
    if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      budget = std::min<uint64_t>(budget, limit.rlim_cur);
    }
  }
  return budget;
}

void RequireMemory(double bytes, const std::string& what) {
  const double budget = static_cast<double>(MemoryBudgetBytes());
  if (bytes <= budget) return;
  throw Error(what + " needs " + FormatBytes(bytes) + "; this machine allows " +
              FormatBytes(budget) + " (physical memory or ulimit)");
}

}  // namespace podsim
