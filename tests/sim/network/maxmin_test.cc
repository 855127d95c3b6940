#include "sim/network/maxmin.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace podsim::sim::internal {
namespace {

// Builds ClassPaths records from (weight, links) pairs.
struct Classes {
  std::vector<int32_t> data;
  std::vector<int64_t> begin;
  void Add(int32_t weight, std::vector<int32_t> links) {
    begin.push_back(static_cast<int64_t>(data.size()));
    data.push_back(weight);
    data.push_back(static_cast<int32_t>(links.size()));
    data.insert(data.end(), links.begin(), links.end());
  }
  ClassPaths paths() const { return {data.data(), begin.data()}; }
  PodVector<int32_t> all() const {
    PodVector<int32_t> ids;
    for (std::size_t c = 0; c < begin.size(); ++c) ids.push_back(static_cast<int32_t>(c));
    return ids;
  }
};

TEST_CASE("max-min: weighted classes, one bottleneck level then the leftovers") {
  // Link 0: 90 B/s, classes A (3 flows) and B (1 flow): share 90 / 4 = 22.5 per flow.
  // Link 1: 100 B/s, classes B and C (1 flow): share 50; B freezes at 22.5 on link 0, so C gets
  // 100 - 22.5 = 77.5. Link 2: 1000 B/s, class C only: not a bottleneck.
  Classes k;
  k.Add(3, {0});
  k.Add(1, {0, 1});
  k.Add(1, {1, 2});
  MaxMinFiller filler(3);
  std::vector<double> used(3, 0.0), rate(3, 0.0);
  PodVector<int32_t> order;
  filler.Fill(k.all(), k.paths(), {90, 100, 1000}, used, 0.0, rate.data(), order);
  CHECK(rate == std::vector<double>{22.5, 22.5, 77.5});
  CHECK(used == std::vector<double>{90, 100, 77.5});
  CHECK(order == PodVector<int32_t>{0, 1, 2});
  CHECK(filler.stats().heap_fills == 0);
}

TEST_CASE("max-min: capacity already used by others, and a base level") {
  // Link 0 has 100 B/s with 40 used by classes outside this fill: 60 left for the 2 flows of
  // class 0 -> 30 each. The base level only keeps rates from going below it by rounding.
  Classes k;
  k.Add(2, {0});
  MaxMinFiller filler(1);
  std::vector<double> used{40}, rate(1, 0.0);
  PodVector<int32_t> order{7};  // earlier contents stay
  filler.Fill(k.all(), k.paths(), {100}, used, 10.0, rate.data(), order);
  CHECK(rate[0] == 30);
  CHECK(used[0] == 100);
  CHECK(order == PodVector<int32_t>{7, 0});
}

TEST_CASE("max-min: many distinct levels switch to the heap method, same rates") {
  // Class i alone on link i of capacity i + 1, plus class N on every link: each link i carries
  // class i and class N. Progressive filling: link 0 saturates first at 1/2, freezing class 0 and
  // class N at 0.5; every other class i then gets (i + 1) - 0.5 alone. The first round freezes 2
  // of 21 classes, less than a quarter: the rest goes through the heap method.
  constexpr int n = 20;
  Classes k;
  std::vector<int32_t> every;
  for (int32_t i = 0; i < n; ++i) {
    k.Add(1, {i});
    every.push_back(i);
  }
  k.Add(1, every);
  std::vector<double> capacity;
  for (int i = 0; i < n; ++i) capacity.push_back(i + 1);
  MaxMinFiller filler(n);
  std::vector<double> used(n, 0.0), rate(n + 1, 0.0);
  PodVector<int32_t> order;
  filler.Fill(k.all(), k.paths(), capacity, used, 0.0, rate.data(), order);
  CHECK(filler.stats().heap_fills == 1);
  CHECK(rate[n] == 0.5);
  CHECK(rate[0] == 0.5);
  for (int i = 1; i < n; ++i) CHECK(rate[static_cast<std::size_t>(i)] == i + 0.5);
  for (int i = 0; i < n; ++i) CHECK(used[static_cast<std::size_t>(i)] == i + 1);  // every link full
  REQUIRE(order.size() == n + 1);
  for (std::size_t i = 1; i < order.size(); ++i) CHECK(rate[static_cast<std::size_t>(order[i - 1])] <= rate[static_cast<std::size_t>(order[i])]);
}

TEST_CASE("max-min: shares equal up to rounding give bitwise-equal rates") {
  // Link 0: 0.3 B/s for 3 flows; link 1: 0.1 + 0.2 B/s for 3 flows. 0.1 + 0.2 != 0.3 in binary
  // floating point, yet both shares are 0.1: all six flows must get one rate.
  Classes k;
  k.Add(3, {0});
  k.Add(3, {1});
  MaxMinFiller filler(2);
  std::vector<double> used(2, 0.0), rate(2, 0.0);
  PodVector<int32_t> order;
  filler.Fill(k.all(), k.paths(), {0.3, 0.1 + 0.2}, used, 0.0, rate.data(), order);
  CHECK(rate[0] == rate[1]);
  CHECK(rate[0] == doctest::Approx(0.1));
}

}  // namespace
}  // namespace podsim::sim::internal
