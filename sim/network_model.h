#pragma once
// How shared links divide bandwidth. The engine starts transfers and asks when the next one
// finishes; it never touches links itself. Fidelities: analytic, flow (max-min fair), packet.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/units.h"
#include "topologies/topology.h"

namespace podsim::sim {

using TransferId = int64_t;

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual std::string name() const = 0;
  // Starts moving `bytes` from src_core to dst_core at time `now` (>= every earlier call's now).
  virtual void Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) = 0;
  // Earliest time any in-flight transfer completes; Time::Max() when idle.
  virtual Time NextEventTime() const = 0;
  // Advances to time t <= NextEventTime(); returns the transfers that completed at t, ascending.
  virtual std::vector<TransferId> Advance(Time t) = 0;
  // Bytes each directed link (by id) has carried so far.
  virtual const std::vector<double>& LinkBytes() const = 0;
};

}  // namespace podsim::sim
