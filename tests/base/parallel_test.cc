// ParallelFor: every index runs exactly once whatever the job count, and a failure surfaces as
// the lowest failing index's exception, as a plain loop would raise it.

#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/parallel.h"

namespace podsim {
namespace {

TEST_CASE("every index runs once, for any number of jobs") {
  for (int jobs : {1, 2, 3, 8, 0}) {
    INFO("jobs " << jobs);
    std::vector<std::atomic<int>> runs(1000);
    ParallelFor(runs.size(), jobs, [&](size_t i) { ++runs[i]; });
    for (const std::atomic<int>& r : runs) CHECK(r.load() == 1);
  }
  int calls = 0;
  ParallelFor(0, 4, [&](size_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("the lowest failing index's exception is rethrown after the others finish") {
  for (int jobs : {1, 2, 4}) {
    INFO("jobs " << jobs);
    std::atomic<int> running{0};
    std::atomic<int> finished{0};
    try {
      ParallelFor(64, jobs, [&](size_t i) {
        ++running;
        if (i == 5 || i == 9) throw std::runtime_error("item " + std::to_string(i));
        ++finished;
        --running;
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      // Items are claimed in order, so 5 was claimed whenever 9 was: 5's error wins.
      CHECK(std::string(e.what()) == "item 5");
    }
    // No body still runs once ParallelFor has returned (the failing ones stay counted).
    CHECK(running.load() <= 2);
    CHECK(finished.load() >= 5);  // 0..4 ran before 5 failed, at least
  }
}

TEST_CASE("jobs 0 means the machine's threads, at least one") {
  CHECK(ResolveJobs(0) >= 1);
  CHECK(ResolveJobs(3) == 3);
}

}  // namespace
}  // namespace podsim
