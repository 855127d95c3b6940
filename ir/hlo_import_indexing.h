#pragma once
// Internal to the HLO importer's gather and scatter lowerings (hlo_import_indexing.cc,
// hlo_import_scatter.cc): reading their dimension numbers.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/hlo_import_internal.h"

namespace podsim::ir::hlo_internal {

// An integer-list attribute (offset_dims=, update_window_dims=, ...); empty when absent.
inline std::vector<int64_t> ListOf(const HloInstr& h, const char* key) {
  auto it = h.int_lists.find(key);
  return it == h.int_lists.end() ? std::vector<int64_t>{} : it->second;
}

inline bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

inline bool IsIdentityPermutation(const std::vector<int64_t>& p) {
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] != static_cast<int64_t>(k)) return false;
  }
  return true;
}

// index_vector_dim of a gather or scatter: a dim of the indices `is` (or its rank, for one
// component) whose extent is the number of dims `map_name` maps the components to.
template <typename Fail>
int64_t IndexVectorDim(const HloInstr& h, const Shape& is, size_t mapped, const char* map_name,
                       const Fail& fail) {
  auto it = h.ints.find("index_vector_dim");
  if (it == h.ints.end()) fail("needs index_vector_dim=");
  const int64_t ivd = it->second;
  if (ivd < 0 || ivd > is.rank()) {
    fail("index_vector_dim=" + std::to_string(ivd) + " is not a dim of " + is.ToString());
  }
  const int64_t components = ivd < is.rank() ? is.dims[static_cast<size_t>(ivd)] : 1;
  if (static_cast<int64_t>(mapped) != components) {
    fail(std::string(map_name) + " has " + std::to_string(mapped) + " dims, the index vector " +
         std::to_string(components));
  }
  return ivd;
}

}  // namespace podsim::ir::hlo_internal
