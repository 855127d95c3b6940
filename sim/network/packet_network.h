#pragma once
// Packet network: each transfer (each path of a split transfer) is cut into packets of
// `packet_bytes` (the last one shorter; a 0-byte transfer sends one empty packet). Every directed
// link serves packets first come, first served with an unbounded queue; serialising p bytes takes
// ceil(p / bandwidth) and the link's latency is the flight time to the next chip.
//  - store-and-forward: a chip forwards a packet once it has fully arrived. Uncontended, n packets
//    over h identical hops take h * latency + (h + n - 1) * serialisation.
//  - cut-through (virtual cut-through): a chip starts forwarding once the packet's head arrives
//    (the next link may not finish before the tail arrives). Uncontended: h * latency + n *
//    serialisation, the analytic model's time up to per-packet rounding.
// A source injects one packet of each transfer at a time: the next packet joins the first link's
// queue when the previous one starts on it, so transfers from one source share its links
// round-robin. It runs one event per packet per hop: about 9 M events per second on one core (a
// radix queue of events, base/radix_queue.h, prefetching of the packets due at the same time, and
// huge pages for the arrays that grow with the packets in flight), so an 8 MiB AllToAll on a
// 32x32 torus (36 M events) takes about 4.3 s (tests/bench/network_bench.cc).
//
// NextEventTime also returns internal packet events, where Advance returns nothing.
// LinkBytes: a packet's bytes count on a link when its transmission on that link is scheduled.

#include <cstdint>
#include <string>
#include <vector>

#include "base/huge_pages.h"
#include "base/radix_queue.h"
#include "sim/network/network_model.h"
#include "sim/network/network_util.h"

namespace podsim::sim {

enum class PacketSwitching : uint8_t { kStoreAndForward, kCutThrough };

struct PacketOptions {
  int64_t packet_bytes = 4096;  // payload per packet, >= 1
  PacketSwitching switching = PacketSwitching::kCutThrough;
};

class PacketNetwork : public NetworkModel {
 public:
  // `topology` must outlive the model. Throws podsim::Error on packet_bytes < 1.
  PacketNetwork(const topo::Topology& topology, PacketOptions options = {});

  std::string name() const override { return "packet"; }
  void Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) override;
  Time NextEventTime() const override;
  std::vector<TransferId> Advance(Time t) override;
  // A transfer is sent when the last packet of each of its paths has left the first link.
  std::vector<TransferId> TakeSent() override;
  const std::vector<double>& LinkBytes() const override { return link_bytes_; }

  // Picoseconds each link spent serialising packets so far.
  const std::vector<int64_t>& LinkBusyPs() const { return link_busy_ps_; }
  // Packet-hop events processed so far.
  int64_t events_processed() const { return events_processed_; }

 private:
  // One path of one transfer, as a stream of packets.
  struct Stream {
    int64_t path = 0;  // its links, in hop order: paths_[path, path + hops)
    int32_t hops = 0;
    int32_t slot = 0;            // transfer slot
    int64_t bytes = 0;
    int64_t packets = 0;      // total, >= 1
    int64_t injected = 0;     // packets handed to the first link so far
    int64_t delivered = 0;
  };
  // A packet carries its stream's path (an offset into paths_, stable until the stream is
  // done) so that a hop reads the packet and the path, not the stream as well.
  struct Packet {
    int64_t path = 0;
    int32_t stream = 0;
    int32_t hop = 0;          // index into the path of the link it is queued for
    int32_t hops = 0;         // path length
    int64_t bytes = 0;
    int64_t tail_ps = 0;      // when its tail is fully at the current chip
  };
  struct TransferSlot {
    TransferId id = 0;
    int32_t pending = 0;  // streams not yet delivered
    int32_t unsent = 0;   // streams whose last packet has not left the source
  };
  // kSent: a stream's last packet has left its first link (index: the transfer's slot).
  enum class EventKind : uint8_t { kArrive, kDeliver, kStreamDone, kSent };
  struct Event {
    EventKind kind;
    int32_t index;  // packet (kArrive, kDeliver) or stream (kStreamDone)
  };

  void Push(int64_t time_ps, EventKind kind, int32_t index);
  void Inject(int32_t stream, int64_t time_ps);
  void OnArrive(int32_t packet, int64_t now_ps);
  void OnStreamDone(int32_t stream, std::vector<TransferId>* done);

  const topo::Topology& topology_;
  const PacketOptions options_;
  std::vector<double> bandwidth_;   // per link, B/s
  std::vector<int64_t> latency_;    // per link, ps
  std::vector<int64_t> full_packet_ps_;  // per link: serialisation of packet_bytes, ps
  std::vector<int64_t> free_ps_;    // per link: when its last scheduled packet ends
  std::vector<double> link_bytes_;
  std::vector<int64_t> link_busy_ps_;

  Time time_;
  int64_t events_processed_ = 0;
  std::vector<TransferId> sent_;  // sent since the last TakeSent
  void OnSent(int32_t slot);
  // By time, equal times in push order. Mutable: finding the next time may move entries between
  // its buckets.
  mutable RadixQueue<Event> events_;
  // The three arrays that grow with the transfers in flight (hundreds of MB for a pod-wide
  // all-to-all) are huge-page backed: most of their cost was page faults.
  std::vector<Stream, HugePageAllocator<Stream>> streams_;
  std::vector<int32_t> free_streams_;
  // Every live stream's path, one after another: one allocation for millions of streams
  // instead of one each. Emptied whenever no stream is live (a collective's end).
  std::vector<int32_t, HugePageAllocator<int32_t>> paths_;
  std::vector<Packet, HugePageAllocator<Packet>> packets_;
  std::vector<int32_t> free_packets_;
  std::vector<TransferSlot> slots_;
  std::vector<int32_t> free_slots_;
  std::vector<topo::Topology::WeightedPath> route_paths_;  // Start's routes (reused)
  std::vector<int64_t> split_parts_;                       // and their bytes per path
};

}  // namespace podsim::sim
