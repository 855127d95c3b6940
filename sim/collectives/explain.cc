#include "sim/collectives/explain.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/format.h"
#include "sim/collectives/collective.h"

namespace podsim::sim {
namespace {

std::string Range(Buffer b, int64_t offset, int64_t elements) {
  return std::string(BufferName(b)) + "[" + std::to_string(offset) + ", +" +
         std::to_string(elements) + ")";
}

std::string DescribeTransfer(const Schedule& s, const topo::Topology& topology,
                             const ChunkTransfer& t) {
  std::string line =
      "p" + std::to_string(t.src) + (t.local() ? " local" : " -> p" + std::to_string(t.dst)) + ": ";
  if (t.num_segments == 0) {
    line += Range(t.src_buffer, t.src_offset, t.elements) + (t.reduce ? " added to " : " to ") +
            Range(t.dst_buffer, t.dst_offset, t.elements);
  } else {
    line += std::to_string(t.num_segments) + " pieces of " + BufferName(t.src_buffer) +
            (t.reduce ? " added to " : " to ") + BufferName(t.dst_buffer) + " (first " +
            Range(t.src_buffer, t.src_offset,
                  s.segments[static_cast<size_t>(t.first_segment)].elements) +
            ")";
  }
  line += ", " + std::to_string(s.Bytes(t)) + " B";
  if (!t.local()) line += ", " + std::to_string(topology.Hops(t.src, t.dst)) + " hop(s)";
  if (t.elements == 0)
    line = "p" + std::to_string(t.src) + " join (waits for " + std::to_string(t.num_deps) +
           " transfers)";
  return line;
}

}  // namespace

std::vector<std::vector<double>> StepLinkBytes(const Schedule& schedule,
                                               const topo::Topology& topology) {
  std::vector<std::vector<double>> bytes(static_cast<size_t>(schedule.num_steps),
                                         std::vector<double>(topology.links().size(), 0.0));
  for (const ChunkTransfer& t : schedule.transfers) {
    if (t.local()) continue;
    const double b = static_cast<double>(schedule.Bytes(t));
    for (const auto& path : topology.RouteSplit(t.src, t.dst)) {
      for (int64_t l : path.links)
        bytes[static_cast<size_t>(t.step)][static_cast<size_t>(l)] += b * path.fraction;
    }
  }
  return bytes;
}

std::string DescribeLink(const topo::Topology& topology, int64_t link) {
  const topo::Link& l = topology.links()[static_cast<size_t>(link)];
  std::string s = "link " + std::to_string(link) + " (";
  if (l.kind == topo::LinkKind::kOnChip) {
    return s + "core " + std::to_string(l.src_core) + " -> core " + std::to_string(l.dst_core) +
           ", on chip)";
  }
  s += "chip " + std::to_string(l.src_chip) + " -> chip " + std::to_string(l.dst_chip);
  if (l.dim >= 0) s += ", dim " + std::to_string(l.dim) + (l.direction > 0 ? " +" : " -");
  return s + ")";
}

std::string ExplainSchedule(const Schedule& schedule, const topo::Topology& topology,
                            const TimingResult* timing, const ExplainOptions& options) {
  std::string out = std::string(CollectiveKindName(schedule.kind)) + " with algorithm '" +
                    schedule.algorithm + "': " + std::to_string(schedule.num_steps) + " steps, " +
                    std::to_string(schedule.transfers.size()) + " transfers, " +
                    std::to_string(schedule.element_bytes) + " B per element\n" +
                    schedule.description + "\n";
  const auto link_bytes = StepLinkBytes(schedule, topology);
  std::vector<std::vector<const ChunkTransfer*>> by_step(
      static_cast<size_t>(std::max(schedule.num_steps, 1)));
  for (const ChunkTransfer& t : schedule.transfers) {
    if (t.local() && !options.show_local) continue;
    by_step[std::min(static_cast<size_t>(t.step), by_step.size() - 1)].push_back(&t);
  }
  for (int step = 0; step < schedule.num_steps; ++step) {
    const auto& transfers = by_step[static_cast<size_t>(step)];
    int64_t bytes = 0, network = 0;
    for (const ChunkTransfer* t : transfers) {
      if (!t->local()) {
        bytes += schedule.Bytes(*t);
        ++network;
      }
    }
    out += "step " + std::to_string(step) + ": " + std::to_string(network) + " messages, " +
           std::to_string(bytes) + " B";
    double seconds = 0;
    if (timing != nullptr && static_cast<size_t>(step) < timing->steps.size()) {
      const StepTiming& st = timing->steps[static_cast<size_t>(step)];
      if (st.transfers > 0) {
        seconds = (st.end - st.start).seconds();
        out += ", " + FormatFixed(st.start.micros(), 3) + " .. " + FormatFixed(st.end.micros(), 3) +
               " us";
      }
    }
    out += "\n";
    for (size_t i = 0; i < transfers.size() && i < options.max_transfers_per_step; ++i) {
      out += "  " + DescribeTransfer(schedule, topology, *transfers[i]) + "\n";
    }
    if (transfers.size() > options.max_transfers_per_step) {
      out += "  ... and " + std::to_string(transfers.size() - options.max_transfers_per_step) +
             " more\n";
    }
    const std::vector<double>& lb = link_bytes[static_cast<size_t>(step)];
    std::vector<int64_t> used;
    for (size_t l = 0; l < lb.size(); ++l) {
      if (lb[l] > 0) used.push_back(static_cast<int64_t>(l));
    }
    std::stable_sort(used.begin(), used.end(), [&](int64_t a, int64_t b) {
      return lb[static_cast<size_t>(a)] > lb[static_cast<size_t>(b)];
    });
    out += "  links used: " + std::to_string(used.size()) + "\n";
    for (size_t i = 0; i < used.size() && i < options.max_links_per_step; ++i) {
      const int64_t l = used[i];
      out += "    " + DescribeLink(topology, l) + ": " +
             FormatFixed(lb[static_cast<size_t>(l)], 0) + " B";
      if (seconds > 0) {
        const double bw = topology.links()[static_cast<size_t>(l)].bandwidth.value;
        out += ", utilisation " +
               FormatFixed(100.0 * lb[static_cast<size_t>(l)] / (bw * seconds), 1) + "%";
      }
      out += "\n";
    }
    if (used.size() > options.max_links_per_step) {
      out += "    ... and " + std::to_string(used.size() - options.max_links_per_step) + " more\n";
    }
  }
  return out;
}

}  // namespace podsim::sim
