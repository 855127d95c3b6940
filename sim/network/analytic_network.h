#pragma once
// Analytic network, contention-aware. Every directed link keeps a backlog: the time at which it
// will have sent every byte given to it so far at its full bandwidth. The transfers that start
// at one time form a batch; each link frees at its backlog and sends the batch's bytes on it one
// transfer after the other, in start order. A transfer ends when the last of its links has sent
// its bytes, plus its path's hop latencies: end = max over its links of (when that link has sent
// them) + latency. Alone on the pod a transfer takes the alpha-beta time (latencies + bytes over
// the bottleneck); links shared by several transfers serialise them, so the busiest link bounds
// every step as it does physically (the injection, bisection and busiest-link bounds of
// sim/collectives/bounds.h hold), in the manner of ASTRA-sim's congestion-aware analytical
// backend. What it leaves out: a transfer held up on one link does not delay its bytes on the
// next (each link is charged as if the bytes were there at once), and transfers sharing a link
// take turns instead of sharing it max-min fairly; so single transfers end earlier or later than
// in the flow model. Bandwidth-bound all-to-alls end within a few percent of the flow model;
// multi-step algorithms whose steps overlap on shared links can differ by up to about 25%
// (docs/collectives.md, "Network models").
//
// LinkBytes: a transfer's bytes count on every link of its paths as soon as it starts.

#include <memory>
#include <string>
#include <vector>

#include "base/radix_queue.h"
#include "sim/network/network_model.h"
#include "sim/network/network_util.h"

namespace podsim::sim {

class AnalyticNetwork : public NetworkModel {
 public:
  // `topology` must outlive the model.
  explicit AnalyticNetwork(const topo::Topology& topology);

  std::string name() const override { return "analytic"; }
  void Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) override;
  Time NextEventTime() const override;
  std::vector<TransferId> Advance(Time t) override;
  // A transfer is sent when the last of its links has sent its bytes (its end before latency).
  std::vector<TransferId> TakeSent() override;
  const std::vector<double>& LinkBytes() const override { return link_bytes_; }

  // Duration of one transfer on an idle pod: the alpha-beta time (see above).
  Time Duration(int64_t src_core, int64_t dst_core, Bytes bytes) const;

 private:
  // One path of a started transfer, on the links of its batch: links part_links_[first, first + n).
  struct Part {
    int32_t transfer;  // index into pending_ids_
    int32_t n;
    int64_t first;
    int64_t bytes;
    int64_t latency_ps;  // of the path
  };
  // Times the batch started at pending_time_ (NextEventTime and Advance call it first).
  void FlushBatch() const;

  const topo::Topology& topology_;
  Time time_;                    // model time: the last Start or Advance
  std::vector<double> link_bytes_;  // per directed link
  // The batch and the link state it updates; mutable because NextEventTime (const) must see the
  // completions of the transfers started at the current time.
  mutable std::vector<Part> pending_;
  mutable std::vector<int32_t> part_links_;      // the parts' links, concatenated
  mutable std::vector<TransferId> pending_ids_;  // every transfer of the batch, in start order
  mutable std::vector<Time> end_;                // FlushBatch's scratch: per transfer of the batch
  mutable std::vector<Time> sent_;               // the same, without the latency
  // Start's routing buffers (Topology::RouteSplitInto) and byte split.
  std::vector<topo::Topology::WeightedPath> route_paths_;
  std::vector<int64_t> split_parts_;
  mutable Time pending_time_;
  mutable std::vector<Time> backlog_;  // per directed link: when it has sent its bytes so far
  // Transfers by completion time (ps): a radix queue, since every transfer may have its own time
  // (a map node per time made an all-to-all over 2048 partitions take 14 s).
  mutable RadixQueue<TransferId> completions_;
  mutable RadixQueue<TransferId> sends_;  // transfers by the time their last byte is sent
  std::vector<TransferId> sent_now_;      // sent at the last Advance
};

}  // namespace podsim::sim
