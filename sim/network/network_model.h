#pragma once
// How shared links divide bandwidth. The engine starts transfers and asks when the next one
// finishes; it never touches links itself. Fidelities: analytic (sim/network/analytic_network.h), flow
// (max-min fair share, sim/network/flow_network.h), packet (sim/network/packet_network.h); build one by name with
// MakeNetworkModel (sim/network/network_factory.h).
//
// Driving loop: Start() transfers at the current time; t = NextEventTime(); Advance(t) returns
// the transfers done at t; start new ones at t; repeat until NextEventTime() is Time::Max().
// Start() may be called at any time between the last Advance and NextEventTime().

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/units.h"
#include "topologies/topology.h"

namespace podsim::sim {

using TransferId = int64_t;

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual std::string name() const = 0;
  // Starts moving `bytes` from src_core to dst_core at time `now`. Requires the model time (the
  // last Advance, or the last Start) <= now <= NextEventTime(); throws podsim::Error otherwise or
  // when a core does not exist. src_core == dst_core completes at `now`. Starts at one time are
  // batched: the models do their work once per distinct time, not once per call.
  virtual void Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) = 0;
  // Earliest time at which Advance must be called: some transfer may complete then; Time::Max()
  // when idle. The packet model also wakes at internal packet events, where Advance may return
  // nothing.
  virtual Time NextEventTime() const = 0;
  // Advances to time t (model time <= t <= NextEventTime()); returns the transfers that completed
  // at t, ascending. Throws podsim::Error if t would skip an event.
  virtual std::vector<TransferId> Advance(Time t) = 0;
  // The transfers whose last byte left the source at the time of the last Advance, ascending,
  // each reported once (call after Advance): from then on the source's send queue may start its
  // next message, while the bytes are still in flight (delivery follows after the path's latency).
  // Every transfer is reported, at the latest when it completes; NextEventTime covers these times.
  virtual std::vector<TransferId> TakeSent() = 0;
  // Bytes each directed link (by id) has carried so far; see each model for when bytes count.
  virtual const std::vector<double>& LinkBytes() const = 0;
};

// Fraction of each directed link's capacity used over [0, elapsed]: LinkBytes / (bandwidth *
// elapsed), in [0, 1] up to rounding. elapsed must be > 0.
std::vector<double> LinkUtilization(const NetworkModel& model, const topo::Topology& topology, Time elapsed);

}  // namespace podsim::sim
