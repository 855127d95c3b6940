// The "spmd_vs_mpmd" experiment (GShard section 3.3, "O(1) compilation"): partition the
// 24-layer MoE Transformer forward stack (models/moe_stack.h, the paper's sizes with
// G = E = D) for D partitions, as one SPMD program and as the MPMD baseline's D programs
// (partitioner/mpmd.h), and report program size and partition time against D.
//
// Config keys (defaults in SpmdVsMpmdConfig):
//   partitions                  [16, 64, ...]: the D values, ascending
//   layer_pairs                 Transformer + MoE layer pairs (12 = 24 layers)
//   repetitions                 timed runs per point; the median is reported
//   mpmd_time_budget_seconds    MPMD runs stop at the first D whose programs take longer than
//                               this (estimated from the previous D, or measured): that D and
//                               the larger ones are reported as skipped, not as rows
//   model                       size overrides (models::MoeLayerConfig::FromJson)
//                               overrides of models::PaperMoeConfig(D)
//
// Outputs: results.csv (mode,partitions,instructions,partition_seconds), results.json (the
// points with program bytes, propagation and lowering seconds, collectives, and which MPMD
// points were skipped and why), series_{spmd,mpmd}.csv and plot.{png,svg} (log-log).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/io.h"
#include "experiments/runners.h"
#include "ir/text.h"
#include "models/moe_stack.h"
#include "partitioner/mpmd.h"
#include "partitioner/propagation.h"
#include "partitioner/spmd_partitioner.h"
#include "report/plot.h"
#include "report/progress.h"

namespace podsim::experiments {

namespace {

struct SpmdVsMpmdConfig {
  std::string name = "spmd_vs_mpmd";
  std::vector<int64_t> partitions = {16, 64, 256, 1024, 4096, 16384, 65536};
  int64_t layer_pairs = 12;
  int64_t repetitions = 3;
  double mpmd_time_budget_seconds = 60;
  // Size overrides of models::PaperMoeConfig (MoeLayerConfig::FromJson).
  nlohmann::json model = nlohmann::json::object();

  static SpmdVsMpmdConfig FromJson(const nlohmann::json& j) {
    SpmdVsMpmdConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    if (r.Has("_notes")) r.String("_notes");
    c.name = r.String("name", c.name);
    if (r.Has("partitions")) c.partitions = r.IntArray("partitions", Limit::AtLeast(1));
    for (size_t k = 1; k < c.partitions.size(); ++k) {
      if (c.partitions[k] <= c.partitions[k - 1]) {
        FailAt(IndexPath(r.PathOf("partitions"), k), "must be ascending");
      }
    }
    c.layer_pairs = r.Int("layer_pairs", c.layer_pairs, Limit::AtLeast(1));
    c.repetitions = r.Int("repetitions", c.repetitions, Limit::AtLeast(1));
    c.mpmd_time_budget_seconds =
        r.Double("mpmd_time_budget_seconds", c.mpmd_time_budget_seconds, Limit::Positive());
    if (r.Has("model")) {
      c.model = r.Value("model");
      c.Model(2);  // errors now, not after a run
    }
    r.Finish();
    return c;
  }

  models::MoeLayerConfig Model(int64_t d) const {
    return models::MoeLayerConfig::FromJson(model, "model", models::PaperMoeConfig(d));
  }
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Point {
  int64_t instructions = 0;
  double seconds = 0;  // median of the repetitions
  nlohmann::json json;
};

Point RunSpmd(const ir::Module& stack, int64_t d, int64_t repetitions) {
  std::vector<double> total, propagation, lowering;
  Point p;
  for (int64_t rep = 0; rep < repetitions; ++rep) {
    std::unique_ptr<ir::Module> m = stack.Clone();
    const auto start = std::chrono::steady_clock::now();
    partitioner::PropagateShardings(*m, d);
    const double propagated = Seconds(start);
    partitioner::PartitionOptions options;
    options.num_partitions = d;
    partitioner::PartitionResult r = partitioner::PartitionSpmd(*m, options);
    total.push_back(Seconds(start));
    propagation.push_back(propagated);
    lowering.push_back(total.back() - propagated);
    if (rep == 0) {
      p.instructions = r.module->InstructionCount();
      p.json = {{"program_bytes", ir::PrintModule(*r.module).size()},
                {"collectives", r.provenance.size()}};
    }
  }
  p.seconds = Median(total);
  p.json["propagation_seconds"] = Median(propagation);
  p.json["lowering_seconds"] = Median(lowering);
  return p;
}

Point RunMpmd(const ir::Module& stack, int64_t d, int64_t repetitions, double budget,
              bool* complete) {
  std::vector<double> total;
  Point p;
  for (int64_t rep = 0; rep < repetitions; ++rep) {
    std::unique_ptr<ir::Module> m = stack.Clone();
    const auto start = std::chrono::steady_clock::now();
    partitioner::PropagateShardings(*m, d);
    partitioner::MpmdOptions options;
    options.num_partitions = d;
    options.time_budget_seconds = budget;
    partitioner::MpmdResult r = partitioner::PartitionMpmd(*m, options);
    total.push_back(Seconds(start));
    if (rep == 0) {
      *complete = r.complete();
      p.instructions = r.instructions;
      p.json = {{"transfers", r.transfers}, {"devices_done", r.devices_done}};
      if (!r.complete()) break;
    }
    // Further repetitions only while they stay well inside the budget.
    if (total.back() * static_cast<double>(repetitions) > budget) break;
  }
  p.seconds = Median(total);
  return p;
}

// `mpmd_note`: "" or what stopped the MPMD series, appended to the title.
std::string PlotScript(const std::string& mpmd_note) {
  const std::string spmd = "'series_spmd.csv' every ::1", mpmd = "'series_mpmd.csv' every ::1";
  const std::string spmd_style = " with linespoints pt 7", mpmd_style = " with linespoints pt 5";
  std::ostringstream gp;
  gp << "set datafile separator ','\n"
     << "set logscale xy\n"
     << "set grid\n"
     << "set key top left Left reverse\n"
     << "set termoption noenhanced\n"
     << "set xlabel 'partitions D'\n"
     << "set multiplot layout 1,2 title 'SPMD vs MPMD partitioning of a 24-layer MoE "
     << "Transformer" << (mpmd_note.empty() ? "" : " " + mpmd_note) << "'\n"
     << "set ylabel 'instructions in the partitioned program(s)'\n"
     << "plot " << spmd << " using 1:2 title 'SPMD (one program)'" << spmd_style << ", \\\n"
     << "     " << mpmd << " using 1:2 title 'MPMD (D programs)'" << mpmd_style << "\n"
     << "set ylabel 'partition time (s): propagation + lowering'\n"
     << "plot " << spmd << " using 1:3 title 'SPMD'" << spmd_style << ", \\\n"
     << "     " << mpmd << " using 1:3 title 'MPMD'" << mpmd_style << "\n"
     << "unset multiplot\n";
  return gp.str();
}

}  // namespace

void CheckSpmdVsMpmd(const nlohmann::json& config) { SpmdVsMpmdConfig::FromJson(config); }

RunSummary RunSpmdVsMpmd(const ExperimentContext& ctx) {
  const SpmdVsMpmdConfig c = SpmdVsMpmdConfig::FromJson(ctx.config);
  RunSummary summary;
  summary.name = c.name;
  CsvTable table({"mode", "partitions", "instructions", "partition_seconds", "status"});
  CsvTable spmd_series({"partitions", "instructions", "partition_seconds"});
  CsvTable mpmd_series({"partitions", "instructions", "partition_seconds"});
  nlohmann::json points = nlohmann::json::array();
  nlohmann::json skipped = nlohmann::json::array();
  report::Progress progress(c.name, static_cast<int64_t>(2 * c.partitions.size()));
  bool mpmd_stopped = false;
  int64_t last_mpmd_d = 0;
  double last_mpmd_seconds = 0;
  for (int64_t d : c.partitions) {
    const std::unique_ptr<ir::Module> stack = models::BuildMoeStack(c.Model(d), c.layer_pairs);
    Point s = RunSpmd(*stack, d, c.repetitions);
    table.AddRow({"spmd", std::to_string(d), std::to_string(s.instructions),
                  CsvNumber(s.seconds), kPointOk});
    CountPoint(summary, kPointOk);
    spmd_series.AddRow({std::to_string(d), std::to_string(s.instructions), CsvNumber(s.seconds)});
    s.json.update({{"mode", "spmd"},
                   {"partitions", d},
                   {"instructions", s.instructions},
                   {"partition_seconds", s.seconds},
                   {"input_instructions", stack->InstructionCount()}});
    points.push_back(s.json);
    progress.Step("spmd D=" + std::to_string(d));

    // MPMD: its per-device programs grow with D, so its time grows about as D^2; skip a D whose
    // estimate from the previous point is over budget.
    std::string reason;
    if (mpmd_stopped) {
      reason = "a smaller D already exceeded the budget";
    } else if (last_mpmd_d > 0) {
      const double ratio = static_cast<double>(d) / static_cast<double>(last_mpmd_d);
      const double estimate = last_mpmd_seconds * ratio * ratio;
      if (estimate > c.mpmd_time_budget_seconds) {
        std::ostringstream why;
        why << "estimated " << CsvNumber(estimate) << " s (D^2 from "
            << CsvNumber(last_mpmd_seconds) << " s at D=" << last_mpmd_d
            << ") exceeds the budget of " << CsvNumber(c.mpmd_time_budget_seconds) << " s";
        reason = why.str();
      }
    }
    if (reason.empty()) {
      bool complete = true;
      Point m = RunMpmd(*stack, d, c.repetitions, c.mpmd_time_budget_seconds, &complete);
      if (complete) {
        table.AddRow({"mpmd", std::to_string(d), std::to_string(m.instructions),
                      CsvNumber(m.seconds), kPointOk});
        CountPoint(summary, kPointOk);
        mpmd_series.AddRow(
            {std::to_string(d), std::to_string(m.instructions), CsvNumber(m.seconds)});
        m.json.update({{"mode", "mpmd"},
                       {"partitions", d},
                       {"instructions", m.instructions},
                       {"partition_seconds", m.seconds}});
        points.push_back(m.json);
        last_mpmd_d = d;
        last_mpmd_seconds = m.seconds;
      } else {
        std::ostringstream why;
        why << "stopped after " << m.json["devices_done"].get<int64_t>() << " of " << d
            << " device programs (" << m.instructions << " instructions) at the budget of "
            << CsvNumber(c.mpmd_time_budget_seconds) << " s";
        reason = why.str();
      }
    }
    if (!reason.empty()) {
      mpmd_stopped = true;
      skipped.push_back({{"partitions", d}, {"reason", reason}});
      table.AddRow({"mpmd", std::to_string(d), "", "", kPointSkipped});
      CountPoint(summary, kPointSkipped);
      std::cerr << c.name << ": MPMD at D=" << d << " skipped: " << reason << "\n";
    }
    progress.Step("mpmd D=" + std::to_string(d));
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteFileAtomic(ctx.out_dir + "/series_spmd.csv", spmd_series.ToString());
  WriteFileAtomic(ctx.out_dir + "/series_mpmd.csv", mpmd_series.ToString());
  WriteResultsJson(ctx, {{"experiment", "spmd_vs_mpmd"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"points", points},
                         {"mpmd_skipped", skipped}});
  std::string note;
  if (!skipped.empty()) {
    note = "(MPMD not run from D=" + std::to_string(skipped[0]["partitions"].get<int64_t>()) +
           ": over its time budget of " + CsvNumber(c.mpmd_time_budget_seconds) + " s)";
  }
  report::RenderPlot(ctx.out_dir, "plot", PlotScript(note), 1400, 600);
  return summary;
}

}  // namespace podsim::experiments
