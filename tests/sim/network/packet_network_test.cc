#include "sim/network/packet_network.h"

#include <doctest/doctest.h>

#include <vector>

#include "base/error.h"
#include "tests/sim/network/network_test_util.h"

namespace podsim::sim {
namespace {

using testing::HandTopology;
using testing::kPsPerMicro;
using testing::RunToCompletion;

// A line of 4 chips, 0 -> 1 -> 2 -> 3, 1e9 B/s per link (1000 B packets serialise in 1 us).
HandTopology Line(int64_t latency_ps) {
  HandTopology topo(4);
  const int64_t a = topo.AddLink(0, 1, 1e9, latency_ps);
  const int64_t b = topo.AddLink(1, 2, 1e9, latency_ps);
  const int64_t c = topo.AddLink(2, 3, 1e9, latency_ps);
  topo.SetRoute(0, 1, {a});
  topo.SetRoute(0, 2, {a, b});
  topo.SetRoute(0, 3, {a, b, c});
  topo.SetRoute(1, 2, {b});
  return topo;
}

TEST_CASE("packet: store-and-forward pipelines n packets over h hops in (h + n - 1) slots") {
  // h = 3 hops, n = 4 packets of 1000 B, slot = 1 us: (3 + 4 - 1) * 1 us = 6 us without
  // latency; each hop adds its 0.5 us flight once per packet on the critical path: + 3 * 0.5.
  for (int64_t latency : {int64_t{0}, kPsPerMicro / 2}) {
    const HandTopology topo = Line(latency);
    PacketNetwork net(topo, PacketOptions{.packet_bytes = 1000, .switching = PacketSwitching::kStoreAndForward});
    net.Start(1, 0, 3, Bytes{4000}, Time());
    const auto done = RunToCompletion(net);
    CHECK(done.at(1).picos() == 6 * kPsPerMicro + 3 * latency);
    CHECK(net.LinkBytes() == std::vector<double>{4000, 4000, 4000});
    CHECK(net.LinkBusyPs() == std::vector<int64_t>{4 * kPsPerMicro, 4 * kPsPerMicro, 4 * kPsPerMicro});
    // 4 packets x 3 hops, 4 deliveries, and the last packet leaving the source (sent).
    CHECK(net.events_processed() == 4 * 3 + 4 + 1);
  }
}

TEST_CASE("packet: a short last packet") {
  // 3500 B = 1000, 1000, 1000, 500 over 3 hops, store-and-forward, no latency (times in us):
  // hop 0: [0,1] [1,2] [2,3] [3,3.5]; hop 1: [1,2] [2,3] [3,4], the short one waits for the
  // link: [4,4.5]; hop 2: [2,3] [3,4] [4,5] [5,5.5]. Done at 5.5 us.
  const HandTopology topo = Line(0);
  PacketNetwork net(topo, PacketOptions{.packet_bytes = 1000, .switching = PacketSwitching::kStoreAndForward});
  net.Start(1, 0, 3, Bytes{3500}, Time());
  CHECK(RunToCompletion(net).at(1).picos() == 5'500'000);
}

TEST_CASE("packet: cut-through takes h * latency + n * slot, the alpha-beta time") {
  // Heads move on after each hop's latency; the link never ends before the tail arrives.
  // 3 hops x 0.5 us + 4 packets x 1 us = 5.5 us (store-and-forward: 7.5 us above).
  const HandTopology topo = Line(kPsPerMicro / 2);
  PacketNetwork net(topo, PacketOptions{.packet_bytes = 1000, .switching = PacketSwitching::kCutThrough});
  net.Start(1, 0, 3, Bytes{4000}, Time());
  CHECK(RunToCompletion(net).at(1).picos() == 5'500'000);
}

TEST_CASE("packet: FIFO queues where paths merge, round-robin at a shared source") {
  const HandTopology topo = Line(0);
  {
    // A (0 -> 2, one 1000 B packet) and B (1 -> 2, one packet) meet on link 1 -> 2.
    // Store-and-forward: A on link 0->1 [0,1] us; B on link 1->2 [0,1]; A reaches chip 1 at 1 us,
    // queues behind nothing: [1,2]. B done at 1 us, A at 2 us.
    PacketNetwork net(topo, PacketOptions{.packet_bytes = 1000, .switching = PacketSwitching::kStoreAndForward});
    net.Start(10, 0, 2, Bytes{1000}, Time());
    net.Start(11, 1, 2, Bytes{1000}, Time());
    const auto done = RunToCompletion(net);
    CHECK(done.at(10).picos() == 2 * kPsPerMicro);
    CHECK(done.at(11).picos() == 1 * kPsPerMicro);
  }
  {
    // Two 2-packet transfers 0 -> 1 started together: a source hands over a transfer's next
    // packet when the previous one starts, so the link alternates A0 [0,1], B0 [1,2], A1 [2,3],
    // B1 [3,4]: A done at 3 us, B at 4 us.
    PacketNetwork net(topo, PacketOptions{.packet_bytes = 1000, .switching = PacketSwitching::kStoreAndForward});
    net.Start(1, 0, 1, Bytes{2000}, Time());
    net.Start(2, 0, 1, Bytes{2000}, Time());
    const auto done = RunToCompletion(net);
    CHECK(done.at(1).picos() == 3 * kPsPerMicro);
    CHECK(done.at(2).picos() == 4 * kPsPerMicro);
  }
}

TEST_CASE("packet: zero bytes, same core, later start, bad input") {
  const HandTopology topo = Line(kPsPerMicro);
  PacketNetwork net(topo, PacketOptions{.packet_bytes = 1000});
  net.Start(1, 0, 3, Bytes{0}, Time());  // one empty packet: 3 hop latencies
  net.Start(2, 2, 2, Bytes{100}, Time());  // same core: at once
  CHECK(net.Advance(Time()) == std::vector<TransferId>{2});
  CHECK_THROWS_AS(net.Start(3, 0, 1, Bytes{1}, Time::Picos(10 * kPsPerMicro)), Error);  // skips events
  auto done = RunToCompletion(net);
  CHECK(done.at(1).picos() == 3 * kPsPerMicro);
  // Starting later on an idle network: 1000 B over one hop, 1 us + 1 us after its start.
  net.Start(4, 1, 2, Bytes{1000}, Time::Picos(5 * kPsPerMicro));
  done = RunToCompletion(net);
  CHECK(done.at(4).picos() == 7 * kPsPerMicro);
  CHECK_THROWS_AS(net.Start(5, 0, 1, Bytes{1}, Time()), Error);  // before the model time
  CHECK_THROWS_AS(net.Start(5, 0, 9, Bytes{1}, Time::Picos(8 * kPsPerMicro)), Error);  // no core 9
  CHECK_THROWS_AS(PacketNetwork(topo, PacketOptions{.packet_bytes = 0}), Error);
}

}  // namespace
}  // namespace podsim::sim
