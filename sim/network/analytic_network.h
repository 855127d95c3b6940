#pragma once
// Analytic (alpha-beta) network: each transfer takes, on each of its paths, the sum of the hop
// latencies plus path bytes / the path's bottleneck bandwidth, as if it were alone in the pod.
// It ignores contention between transfers entirely: transfers sharing a link do not slow each
// other down, so it is a lower bound on the flow and packet models. A transfer split over several
// paths (tie-split routing) takes the longest path's latency plus the time its most loaded link
// needs for the bytes this transfer puts on it (its own paths may share links). The
// per-algorithm closed forms of the scaling book live with the collective algorithms, not here.
//
// LinkBytes: a transfer's bytes count on every link of its paths as soon as it starts.

#include <memory>
#include <string>
#include <vector>

#include "sim/network/network_model.h"
#include "sim/network/network_util.h"

namespace podsim::sim {

class AnalyticNetwork : public NetworkModel {
 public:
  // `topology` must outlive the model.
  explicit AnalyticNetwork(const topo::Topology& topology);

  std::string name() const override { return "analytic"; }
  void Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) override;
  Time NextEventTime() const override { return completions_.NextTime(); }
  std::vector<TransferId> Advance(Time t) override;
  const std::vector<double>& LinkBytes() const override { return link_bytes_; }

  // Duration of one transfer on an idle pod (see above).
  Time Duration(int64_t src_core, int64_t dst_core, Bytes bytes) const;

 private:
  const topo::Topology& topology_;
  Time time_;                    // model time: the last Start or Advance
  std::vector<double> link_bytes_;  // per directed link
  internal::CompletionQueue completions_;
};

}  // namespace podsim::sim
