// base/radix_queue.h against a reference: a binary heap on (key, push sequence), the order the
// packet network's event queue had before; plus the misuse it refuses.

#include "base/radix_queue.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace podsim {
namespace {

TEST_CASE("RadixQueue pops by key, equal keys first in first out") {
  RadixQueue<int> q;
  q.Push(5, 1);
  q.Push(3, 2);
  q.Push(5, 3);
  q.Push(3, 4);
  q.Push(1ll << 40, 5);
  CHECK(q.size() == 5);
  CHECK(q.TopKey() == 3);
  CHECK(q.Pop() == 2);
  q.Push(3, 6);  // the current key again: after the 3 already queued
  CHECK(q.Pop() == 4);
  CHECK(q.Pop() == 6);
  CHECK(q.Pop() == 1);
  CHECK(q.Pop() == 3);
  CHECK(q.TopKey() == (1ll << 40));
  CHECK(q.Pop() == 5);
  CHECK(q.empty());
}

TEST_CASE("RadixQueue: a push below the top but not below the last pop is still allowed") {
  // A simulator asks for the next event time, then starts something earlier (but not before
  // the clock): the queue must take it and pop it first.
  RadixQueue<int> q;
  q.Push(100, 1);
  CHECK(q.TopKey() == 100);
  q.Push(40, 2);
  CHECK(q.TopKey() == 40);
  CHECK(q.Pop() == 2);
  q.Push(40, 3);  // bucket 0 again
  CHECK(q.TopKey() == 40);
  CHECK(q.Pop() == 3);
  CHECK(q.TopKey() == 100);
  q.Push(70, 4);
  CHECK(q.TopKey() == 70);
  CHECK(q.Pop() == 4);
  CHECK(q.Pop() == 1);
  CHECK(q.empty());
}

TEST_CASE("RadixQueue refuses a key below the last popped one") {
  RadixQueue<int> q;
  CHECK_THROWS_AS(q.Push(-1, 0), std::logic_error);
  q.Push(10, 0);
  CHECK(q.Pop() == 0);
  CHECK_THROWS_AS(q.Push(9, 1), std::logic_error);
  q.Push(10, 2);  // equal is allowed
  CHECK(q.Pop() == 2);
}

TEST_CASE("RadixQueue matches a (key, sequence) heap on random monotone workloads") {
  // Workloads shaped like a simulator's: each pop pushes 0-3 entries at the popped key plus a
  // delay drawn from a few scales (0: same time; small; large), with many ties.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    RadixQueue<int> q;
    using Ref = std::tuple<int64_t, uint64_t, int>;
    std::priority_queue<Ref, std::vector<Ref>, std::greater<Ref>> ref;
    uint64_t seq = 0;
    int next_value = 0;
    auto push = [&](int64_t key) {
      q.Push(key, next_value);
      ref.emplace(key, seq++, next_value);
      ++next_value;
    };
    for (int i = 0; i < 50; ++i) push(static_cast<int64_t>(rng() % 1000));
    int pops = 0;
    int64_t last = 0;
    while (!ref.empty()) {
      REQUIRE(!q.empty());
      REQUIRE(q.size() == ref.size());
      if (rng() % 8 == 0 && pops < 20000) {
        // Ask for the top, then push something between the last popped key and it.
        const int64_t top = q.TopKey();
        REQUIRE(top == std::get<0>(ref.top()));
        if (top > last) push(last + static_cast<int64_t>(rng() % static_cast<uint64_t>(top - last)));
      }
      const auto [key, s, value] = ref.top();
      last = key;
      ref.pop();
      REQUIRE(q.TopKey() == key);
      REQUIRE(q.Pop() == value);
      if (++pops > 20000) continue;  // drain
      const int children = static_cast<int>(rng() % 4);
      for (int c = 0; c < children && pops < 20000; ++c) {
        const int scale = static_cast<int>(rng() % 3);
        const int64_t delay = scale == 0 ? 0 : scale == 1 ? static_cast<int64_t>(rng() % 16)
                                                          : static_cast<int64_t>(rng() % (1ll << 36));
        push(key + delay);
      }
    }
    CHECK(q.empty());
  }
}

TEST_CASE("RadixQueue: buckets of many blocks keep key then push order, and reuse their blocks") {
  // 20,000 entries (about ten 2,048-entry blocks) land in one bucket (keys in [2^20, 2^21),
  // half of them on 64 shared keys); popping them all, twice over, gives ascending keys and, on
  // a tie, ascending push order: the (key, push index) order sorted independently.
  RadixQueue<int> q;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2; ++round) {
    const int64_t base = (int64_t{1} << 20) * (2 * round + 1);
    std::vector<std::pair<int64_t, int>> expected;
    for (int i = 0; i < 20000; ++i) {
      const int64_t key = base + (i % 2 == 0 ? static_cast<int64_t>(rng() % 64)
                                             : static_cast<int64_t>(rng() % (int64_t{1} << 20)));
      q.Push(key, i);
      expected.emplace_back(key, i);
    }
    std::sort(expected.begin(), expected.end());
    for (const auto& [key, value] : expected) {
      REQUIRE(q.TopKey() == key);
      REQUIRE(q.Pop() == value);
    }
    CHECK(q.empty());
  }
}

}  // namespace
}  // namespace podsim
