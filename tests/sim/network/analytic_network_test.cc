#include "sim/network/analytic_network.h"

#include <doctest/doctest.h>

#include <vector>

#include "base/error.h"
#include "sim/network/network_factory.h"
#include "tests/sim/network/network_test_util.h"

namespace podsim::sim {
namespace {

using testing::HandTopology;
using testing::kPsPerMicro;
using testing::kPsPerSecond;
using testing::RunToCompletion;

TEST_CASE("analytic: alone, latency sum + bytes / bottleneck; shared links serialise") {
  // Path 0 -> 1 -> 2: links a of 100 B/s and b of 50 B/s, 1 us latency each. 100 B alone: the
  // bottleneck b takes 2 s, + 2 us of latency.
  HandTopology topo(3);
  const int64_t a = topo.AddLink(0, 1, 100, kPsPerMicro);
  const int64_t b = topo.AddLink(1, 2, 50, kPsPerMicro);
  topo.SetRoute(0, 2, {a, b});
  topo.SetRoute(1, 2, {b});
  AnalyticNetwork net(topo);
  CHECK(net.Duration(0, 2, Bytes{100}).picos() == 2 * kPsPerSecond + 2 * kPsPerMicro);
  // One batch at t = 0. Link a sends transfer 1 by 1 s, 2 by 2 s. Link b sends, in start order,
  // 1 by 2 s, 2 by 4 s, 3 (50 B) by 5 s. Each ends at its later link + its path latency.
  net.Start(1, 0, 2, Bytes{100}, Time());
  net.Start(2, 0, 2, Bytes{100}, Time());
  net.Start(3, 1, 2, Bytes{50}, Time());
  // A later batch queues behind link b's backlog (5 s): 50 B more by 6 s, + 1 us.
  net.Start(5, 1, 2, Bytes{50}, Time::Picos(kPsPerSecond));
  const auto done = RunToCompletion(net);
  CHECK(done.at(1).picos() == 2 * kPsPerSecond + 2 * kPsPerMicro);
  CHECK(done.at(2).picos() == 4 * kPsPerSecond + 2 * kPsPerMicro);
  CHECK(done.at(3).picos() == 5 * kPsPerSecond + kPsPerMicro);
  CHECK(done.at(5).picos() == 6 * kPsPerSecond + kPsPerMicro);
  CHECK(net.LinkBytes() == std::vector<double>{200, 300});
  AnalyticNetwork local(topo);
  local.Start(4, 1, 1, Bytes{50}, Time());  // same core: at once
  CHECK(RunToCompletion(local).at(4).picos() == 0);
}

TEST_CASE("analytic: a split transfer ends with its slowest path") {
  // 300 B split 1/3 over a 100 B/s direct link (1 s) and 2/3 over a 2-hop 100 B/s path (2 s +
  // one extra latency): 2 s + 2 us.
  HandTopology topo(3);
  const int64_t direct = topo.AddLink(0, 2, 100, kPsPerMicro);
  const int64_t x = topo.AddLink(0, 1, 100, kPsPerMicro);
  const int64_t y = topo.AddLink(1, 2, 100, kPsPerMicro);
  topo.SetSplitRoute(0, 2, {{{direct}, 1.0 / 3}, {{x, y}, 2.0 / 3}});
  AnalyticNetwork net(topo);
  net.Start(1, 0, 2, Bytes{300}, Time());
  CHECK(RunToCompletion(net).at(1).picos() == 2 * kPsPerSecond + 2 * kPsPerMicro);
  CHECK(net.LinkBytes() == std::vector<double>{100, 200, 200});
}

TEST_CASE("network factory and options") {
  HandTopology topo(2);
  topo.SetRoute(0, 1, {topo.AddLink(0, 1, 100, 0)});
  for (const std::string& name : NetworkModelNames()) CHECK(MakeNetworkModel(name, topo)->name() == name);
  CHECK_THROWS_WITH_AS(MakeNetworkModel("fluid", topo), doctest::Contains("unknown model 'fluid'"), Error);

  const NetworkOptions options = NetworkOptionsFromJson(
      nlohmann::json{{"packet_bytes", 512}, {"switching", "store-and-forward"}, {"aggregate_flows", false}});
  CHECK(options.packet.packet_bytes == 512);
  CHECK(options.packet.switching == PacketSwitching::kStoreAndForward);
  CHECK_FALSE(options.flow.aggregate);
  CHECK(NetworkOptionsFromJson(NetworkOptionsToJson(options)).packet.packet_bytes == 512);
  CHECK_THROWS_WITH_AS(NetworkOptionsFromJson(nlohmann::json{{"packet_bytes", 0}}),
                       "network.packet_bytes: must be >= 1, got 0", Error);
  CHECK_THROWS_WITH_AS(NetworkOptionsFromJson(nlohmann::json{{"packets", 1}}, "sim.network"),
                       doctest::Contains("sim.network.packets: unknown key"), Error);
  CHECK_THROWS_WITH_AS(NetworkOptionsFromJson(nlohmann::json{{"switching", "wormhole"}}),
                       doctest::Contains("network.switching"), Error);

  // Utilisation: 100 B over a 100 B/s link in 2 s is half the capacity.
  auto net = MakeNetworkModel("flow", topo);
  net->Start(1, 0, 1, Bytes{100}, Time());
  RunToCompletion(*net);
  CHECK(LinkUtilization(*net, topo, Time::Picos(2 * kPsPerSecond)) == std::vector<double>{0.5});
  CHECK_THROWS_AS(LinkUtilization(*net, topo, Time()), Error);
}

}  // namespace
}  // namespace podsim::sim
