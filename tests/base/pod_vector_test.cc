// PodVector (base/pod_vector.h): growth keeps the values, resize fills, and a size whose byte
// count would overflow is an error naming it, not a wrapped realloc.

#include "base/pod_vector.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace podsim {
namespace {

TEST_CASE("PodVector keeps its values across growth and fills what resize adds") {
  PodVector<int64_t> v;
  for (int64_t i = 0; i < 1000; ++i) v.push_back(i * i);  // grows from 16 by doubling
  REQUIRE(v.size() == 1000);
  for (int64_t i = 0; i < 1000; ++i) CHECK(v[static_cast<size_t>(i)] == i * i);
  v.resize(1003, -7);
  CHECK(v[999] == 999 * 999);
  CHECK(v[1000] == -7);
  CHECK(v[1002] == -7);
  v.resize(2);
  CHECK(v.size() == 2);
  CHECK(v.back() == 1);
  const PodVector<int64_t> copy = v;
  CHECK(copy == v);
}

TEST_CASE("PodVector refuses a size whose bytes overflow") {
  PodVector<int64_t> v{1, 2, 3};
  // 2^61 elements of 8 bytes are 2^64 bytes: more than any object can be.
  const size_t too_many = size_t{1} << 61;
  try {
    v.reserve(too_many);
    FAIL("expected an error");
  } catch (const std::length_error& e) {
    CHECK(std::string(e.what()).find(std::to_string(too_many)) != std::string::npos);
  }
  // Unchanged.
  CHECK(v.size() == 3);
  CHECK(v[2] == 3);
}

}  // namespace
}  // namespace podsim
