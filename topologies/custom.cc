#include "topologies/custom.h"

#include <sstream>
#include <stdexcept>
#include <utility>

#include "base/config.h"
#include "topologies/describe.h"
#include "topologies/on_chip_links.h"
#include "topologies/shortest_paths.h"

namespace podsim::topo {

CustomTopology::CustomTopology(TopologyConfig config) : config_(std::move(config)) {
  if (config_.kind != "custom") {
    FailAt("topology.kind",
           "a custom topology needs kind \"custom\", got \"" + config_.kind + "\"");
  }
  config_.Validate("topology");
  name_ = config_.ResolvedName();
  links_.reserve(config_.edges.size() * 2);
  for (const EdgeConfig& e : config_.edges) {
    const double bandwidth = e.link_bandwidth.value_or(config_.link_bandwidth);
    const int64_t latency_ps = MicrosToPs(e.hop_latency_us.value_or(config_.hop_latency_us));
    for (auto [src, dst] : {std::pair{e.a, e.b}, std::pair{e.b, e.a}}) {
      links_.push_back(Link{.id = static_cast<int64_t>(links_.size()),
                            .src_chip = src,
                            .dst_chip = dst,
                            .bandwidth = BytesPerSecond{bandwidth},
                            .latency = Time::Picos(latency_ps)});
    }
  }
  first_on_chip_link_ = static_cast<int64_t>(links_.size());
  AppendOnChipLinks(config_.num_chips, config_.cores_per_chip, config_.on_chip_bandwidth,
                    MicrosToPs(config_.on_chip_latency_us), links_);
  router_ = std::make_unique<ShortestPathRouter>(config_.num_chips, links_, config_.route_by);
}

CustomTopology::~CustomTopology() = default;

void CustomTopology::CheckCore(int64_t core) const {
  if (core < 0 || core >= num_cores()) {
    throw std::out_of_range("core " + std::to_string(core) + " is not in [0, " +
                            std::to_string(num_cores()) + ") on topology " + name_);
  }
}

std::vector<int64_t> CustomTopology::Route(int64_t src_core, int64_t dst_core) const {
  CheckCore(src_core);
  CheckCore(dst_core);
  if (src_core == dst_core) return {};
  const int64_t cpc = config_.cores_per_chip;
  if (src_core / cpc == dst_core / cpc) {
    return {OnChipLinkId(first_on_chip_link_, cpc, src_core, dst_core)};
  }
  return router_->Route(src_core / cpc, dst_core / cpc);
}

int64_t CustomTopology::Hops(int64_t src_core, int64_t dst_core) const {
  CheckCore(src_core);
  CheckCore(dst_core);
  if (src_core == dst_core) return 0;
  const int64_t cpc = config_.cores_per_chip;
  if (src_core / cpc == dst_core / cpc) return 1;
  return router_->Hops(src_core / cpc, dst_core / cpc);
}

int64_t CustomTopology::Diameter() const { return router_->Diameter(); }
double CustomTopology::MeanHops() const { return router_->MeanHops(); }

nlohmann::json CustomTopology::ToJson() const { return config_.ToJson(); }

std::string CustomTopology::Describe() const {
  std::ostringstream os;
  os << "topology " << name_ << ": custom graph of " << config_.num_chips << " chips, "
     << config_.edges.size() << " edges, " << cores_per_chip()
     << (cores_per_chip() == 1 ? " core" : " cores") << " per chip = " << num_cores()
     << " cores (partitions)\n";
  os << DescribeLinks(*this, 1);
  os << "  routing:     shortest paths by "
     << (config_.route_by == RouteMetric::kLatency ? "latency (Dijkstra)" : "hop count (BFS)")
     << "; ties to the lowest link id (edge i is links 2i: a->b, 2i+1: b->a)\n";
  if (config_.num_chips <= 4096) {
    os << "  hops:        diameter " << Diameter() << ", mean " << MeanHops()
       << " (chip to chip)\n";
  }
  os << "  chips:       numbered 0.." << config_.num_chips - 1 << " as in the edge list\n";
  os << DescribeCoreNumbering(*this) << DescribeComments(config_.comments);
  if (config_.edges.size() <= 64) {
    os << "  edges:      ";
    for (const EdgeConfig& e : config_.edges) os << " " << e.a << "-" << e.b;
    os << "\n";
  }
  os << CoreTable(*this, /*max_chips=*/256);
  return os.str();
}

}  // namespace podsim::topo
