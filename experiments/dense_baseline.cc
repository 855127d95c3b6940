// The "dense_baseline" experiment (GShard's T(96L) baseline, section 5): the dense 96-layer
// Transformer (models/dense_transformer.h) trained with GPipe pipeline parallelism on a pod
// (pipeline/gpipe.h), over a sweep of stage and micro-batch counts, with the core-years to train
// on `tokens` tokens set beside the MoE model's from the Table 3 experiment's point.
//
// Config keys:
//   model        models::DenseTransformerConfig JSON (default T(96L))
//   topology     preset or file; topology_overrides merged into it
//   sim          sim::SimOptions JSON (the device is the topology's unless it names one)
//   optimizer    models::OptimizerConfig JSON (default Adafactor)
//   batch_tokens tokens per step over all replicas (default 2^22, the paper's "about 4M")
//   tokens       tokens of the training run, for days and core-years (default 1e12)
//   placement    "replica-major" (default) or "stage-major" (pipeline/gpipe.h)
//   sweep        {"stages": [...], "micro_batches": [...]}: the Cartesian grid of points
//   moe_reference  null, or {"model": GShardModelConfig JSON, "topology": ...}: the MoE point
//                whose core-years the dense ones are compared with (a training_step point, run
//                with this config's topology_overrides, sim, optimizer and tokens)
//   paper        {"dense_core_years", "dense_days", "moe_core_years"}: the paper's figures,
//                reported beside podsim's
//   trace        write trace.json (Chrome trace) of the fastest point that fits (default true)
//   plot         plot.{png,svg}: step time and bubble fraction against micro-batches, one line
//                per stage count (default true)
// A point whose micro-batch is not a whole number of sequences, or whose stages do not divide
// the cores, is "invalid" with its reason; one that does not fit HBM is "oom" with the stage
// that overflows, its time columns empty.

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "pipeline/gpipe.h"
#include "report/chrome_trace.h"
#include "report/plot.h"
#include "report/progress.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

const std::vector<std::string> kDenseColumns = {
    "stages",  "micro_batches", "replicas",     "micro_batch_tokens",
    "step_s",  "bubble",        "forward_ms",   "backward_ms",
    "send_ms", "allreduce_ms",  "optimizer_ms", "peak_gib",
    "mfu",     "days",          "core_years",   "status"};

struct DenseBaselineConfig {
  std::string name = "dense_baseline";
  nlohmann::json model = nlohmann::json::object();
  std::string topology = "tpu-v3-2048";
  nlohmann::json topology_overrides = nlohmann::json::object();
  nlohmann::json sim = nlohmann::json::object();
  models::OptimizerConfig optimizer;
  int64_t batch_tokens = int64_t{1} << 22;
  double tokens = 1e12;
  pipeline::GPipePlacement placement = pipeline::GPipePlacement::kReplicaMajor;
  std::vector<int64_t> stages = {16};
  std::vector<int64_t> micro_batches = {16};
  bool has_moe = false;
  TrainingPointSpec moe;
  nlohmann::json paper = nlohmann::json::object();
  bool trace = true;
  bool plot = true;

  static DenseBaselineConfig FromJson(const nlohmann::json& j) {
    DenseBaselineConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    if (r.Has("_notes")) r.String("_notes");
    c.name = r.String("name", c.name);
    c.model = r.ObjectValue("model");
    c.topology = r.String("topology", c.topology);
    c.topology_overrides = r.ObjectValue("topology_overrides");
    c.sim = r.ObjectValue("sim");
    if (r.Has("optimizer")) {
      c.optimizer = models::OptimizerConfig::FromJson(r.Value("optimizer"), r.PathOf("optimizer"),
                                                      c.optimizer);
    }
    c.batch_tokens = r.Int("batch_tokens", c.batch_tokens, Limit::AtLeast(1));
    c.tokens = r.Double("tokens", c.tokens, Limit::Positive());
    if (r.Has("placement")) {
      c.placement =
          pipeline::ParseGPipePlacement(r.Choice("placement", {"replica-major", "stage-major"}));
    }
    if (r.Has("sweep")) {
      JsonReader s(r.Value("sweep"), r.PathOf("sweep"));
      c.stages = s.IntArray("stages", Limit::AtLeast(1));
      c.micro_batches = s.IntArray("micro_batches", Limit::AtLeast(1));
      if (c.stages.empty()) s.Fail("stages", "must not be empty");
      if (c.micro_batches.empty()) s.Fail("micro_batches", "must not be empty");
      s.Finish();
    }
    if (r.Has("moe_reference") && !r.Value("moe_reference").is_null()) {
      JsonReader m(r.Value("moe_reference"), r.PathOf("moe_reference"));
      c.has_moe = true;
      c.moe.model = m.Value("model");
      c.moe.topology = m.String("topology");
      m.Finish();
    }
    if (r.Has("paper")) {
      JsonReader p(r.Value("paper"), r.PathOf("paper"));
      for (const char* key : {"dense_core_years", "dense_days", "moe_core_years"}) {
        if (p.Has(key)) c.paper[key] = p.Double(key, Limit::Positive());
      }
      p.Finish();
    }
    c.trace = r.Bool("trace", c.trace);
    c.plot = r.Bool("plot", c.plot);
    r.Finish();
    // The MoE point runs with the same calibration, optimizer and training tokens.
    c.moe.topology_overrides = c.topology_overrides;
    c.moe.sim = c.sim;
    c.moe.optimizer = c.optimizer;
    c.moe.tokens = c.tokens;
    // Errors now, not after the first point ran.
    c.Model();
    c.Resolve();
    if (c.has_moe) CheckTrainingPoint(c.moe, "moe_reference");
    return c;
  }

  models::DenseTransformerConfig Model() const {
    return models::DenseTransformerConfig::FromJson(model, "model", {});
  }
  std::pair<nlohmann::json, sim::SimOptions> Resolve() const {
    const nlohmann::json t = PointTopologyJson(topology, topology_overrides, "");
    const int64_t cores = topo::TopologyConfig::FromJson(t, "topology").NumCores();
    return {t, PointSimOptions(sim, t, "", cores)};
  }
};

struct DensePoint {
  int64_t stages = 0, micro_batches = 0;
  std::string status;
  pipeline::GPipeRun run;
  double step_s = 0, days = 0, core_years = 0, mfu = 0;
};

void WritePlot(const ExperimentContext& ctx, const DenseBaselineConfig& c,
               const std::vector<DensePoint>& points) {
  std::ostringstream data, gp;
  for (size_t s = 0; s < c.stages.size(); ++s) {
    if (s > 0) data << "\n\n";
    data << "# " << c.stages[s] << " stages\nmicro_batches step_s bubble\n";
    for (const DensePoint& p : points) {
      if (p.stages != c.stages[s] || p.status != kPointOk) continue;
      data << p.micro_batches << ' ' << FormatFixed(p.step_s, 4) << ' '
           << FormatFixed(p.run.schedule.bubble_fraction, 4) << '\n';
    }
  }
  WriteFileAtomic(ctx.out_dir + "/plot.csv", data.str());
  gp << report::PaletteLinetypes(static_cast<int>(c.stages.size()))
     << "set multiplot layout 1,2 title '" << c.name
     << ": GPipe training step of the dense baseline (invalid and OOM points omitted)' "
        "noenhanced\n"
     << "set logscale x 2\nset xlabel 'micro-batches per step'\nset grid\nset key top right\n"
     << "set yrange [0:*]\nset ylabel 'step time (s)'\nplot ";
  for (size_t s = 0; s < c.stages.size(); ++s) {
    gp << (s ? ", " : "") << "'plot.csv' index " << s << " using 1:2 with linespoints lt " << s + 1
       << " pt 7 title '" << c.stages[s] << " stages'";
  }
  gp << "\nset yrange [0:1]\nset ylabel 'pipeline bubble (fraction of the step)'\nplot ";
  for (size_t s = 0; s < c.stages.size(); ++s) {
    gp << (s ? ", " : "") << "'plot.csv' index " << s << " using 1:3 with linespoints lt " << s + 1
       << " pt 7 title '" << c.stages[s] << " stages'";
  }
  gp << "\nunset multiplot\n";
  report::RenderPlot(ctx.out_dir, "plot", gp.str(), 1200, 550);
}

nlohmann::json StagesJson(const pipeline::GPipeRun& run) {
  nlohmann::json out = nlohmann::json::array();
  for (const pipeline::GPipeStage& s : run.stages) {
    out.push_back({{"first_piece", s.first_piece},
                   {"pieces", s.pieces},
                   {"encoder_layers", s.encoder_layers},
                   {"decoder_layers", s.decoder_layers},
                   {"parameters", s.parameters},
                   {"forward_us", s.cost.forward.micros()},
                   {"backward_us", s.cost.backward.micros()},
                   {"send_forward_us", s.cost.send_forward.micros()},
                   {"send_backward_us", s.cost.send_backward.micros()},
                   {"all_reduce_us", s.cost.all_reduce.micros()},
                   {"optimizer_us", s.cost.optimizer.micros()},
                   {"input_bytes", s.input_bytes},
                   {"peak_bytes", s.peak_bytes}});
  }
  return out;
}

}  // namespace

void CheckDenseBaseline(const nlohmann::json& config) { DenseBaselineConfig::FromJson(config); }

RunSummary RunDenseBaseline(const ExperimentContext& ctx) {
  const DenseBaselineConfig c = DenseBaselineConfig::FromJson(ctx.config);
  RunSummary summary;
  summary.name = c.name;
  const models::DenseTransformerConfig model = c.Model();
  auto [topology_json, options] = c.Resolve();
  const std::unique_ptr<topo::Topology> topology = topo::LoadTopology(topology_json, "topology");
  const int64_t cores = topology->num_cores();

  std::vector<DensePoint> points;
  CsvTable table(kDenseColumns);
  nlohmann::json points_json = nlohmann::json::array();
  const int64_t total =
      static_cast<int64_t>(c.stages.size() * c.micro_batches.size()) + (c.has_moe ? 1 : 0);
  report::Progress progress(c.name, total);
  for (int64_t k : c.stages) {
    for (int64_t m : c.micro_batches) {
      const std::string label = std::to_string(k) + " stages x " + std::to_string(m) + " micro";
      progress.Start(label);
      DensePoint p;
      p.stages = k;
      p.micro_batches = m;
      nlohmann::json pj = {{"stages", k}, {"micro_batches", m}};
      std::vector<std::string> row(kDenseColumns.size());
      auto set = [&](const std::string& column, std::string value) {
        row[std::find(kDenseColumns.begin(), kDenseColumns.end(), column) - kDenseColumns.begin()] =
            std::move(value);
      };
      set("stages", std::to_string(k));
      set("micro_batches", std::to_string(m));
      pipeline::GPipeOptions g;
      g.stages = k;
      g.micro_batches = m;
      g.batch_tokens = c.batch_tokens;
      g.placement = c.placement;
      try {
        p.run = pipeline::RunGPipe(model, g, c.optimizer, *topology, options);
        p.status = p.run.oom ? kPointOom : kPointOk;
      } catch (const Error& e) {
        // The grid holds shapes a pod cannot take (stages not dividing its cores, micro-batches
        // shorter than a sequence): such a point is invalid, with its reason.
        p.status = kPointInvalid;
        pj["error"] = e.what();
        progress.Note(c.name + ": " + label + ": invalid: " + e.what());
      }
      CountPoint(summary, p.status);
      set("status", p.status);
      if (p.status != kPointInvalid) {
        const pipeline::GPipeRun& run = p.run;
        set("replicas", std::to_string(run.replicas));
        set("micro_batch_tokens", std::to_string(run.micro_batch_tokens));
        set("peak_gib", FormatFixed(static_cast<double>(run.peak_bytes) / (1 << 30), 3));
        pj.update({{"replicas", run.replicas},
                   {"micro_batch_tokens", run.micro_batch_tokens},
                   {"peak_memory_bytes", run.peak_bytes},
                   {"stages_detail", StagesJson(run)}});
        if (run.oom) {
          pj["error"] = "out of memory: " + run.oom_detail;
          progress.Note(c.name + ": " + label + ": out of memory: " + run.oom_detail);
        } else {
          // The slowest stage's per-micro-batch costs are the ones the pipeline runs at.
          const pipeline::GPipeStage* slow = &run.stages[0];
          Time send;
          for (const pipeline::GPipeStage& s : run.stages) {
            if (s.cost.forward + s.cost.backward > slow->cost.forward + slow->cost.backward) {
              slow = &s;
            }
            send = std::max({send, s.cost.send_forward, s.cost.send_backward});
          }
          p.step_s = run.schedule.step_time.seconds();
          const double steps = c.tokens / static_cast<double>(c.batch_tokens);
          p.days = steps * p.step_s / 86400;
          p.core_years = static_cast<double>(cores) * p.days / 365;
          p.mfu = run.model_flops /
                  (static_cast<double>(cores) * p.step_s * options.device.matrix_bf16.value);
          set("step_s", FormatFixed(p.step_s, 4));
          set("bubble", FormatFixed(run.schedule.bubble_fraction, 4));
          set("forward_ms", FormatFixed(slow->cost.forward.micros() * 1e-3, 3));
          set("backward_ms", FormatFixed(slow->cost.backward.micros() * 1e-3, 3));
          set("send_ms", FormatFixed(send.micros() * 1e-3, 3));
          set("allreduce_ms", FormatFixed(run.stages[0].cost.all_reduce.micros() * 1e-3, 3));
          set("optimizer_ms", FormatFixed(slow->cost.optimizer.micros() * 1e-3, 3));
          set("mfu", FormatFixed(p.mfu, 4));
          set("days", FormatFixed(p.days, 2));
          set("core_years", FormatFixed(p.core_years, 2));
          pj.update({{"step_time_s", p.step_s},
                     {"pipeline_time_s", run.schedule.pipeline_time.seconds()},
                     {"bubble_fraction", run.schedule.bubble_fraction},
                     {"mfu", p.mfu},
                     {"days", p.days},
                     {"core_years", p.core_years}});
        }
      }
      pj["status"] = p.status;
      table.AddRow(row);
      points_json.push_back(pj);
      points.push_back(std::move(p));
      progress.Step(label);
    }
  }

  // The fastest point that fits: podsim's best GPipe configuration of the grid.
  const DensePoint* best = nullptr;
  for (const DensePoint& p : points) {
    if (p.status == kPointOk && (best == nullptr || p.step_s < best->step_s)) best = &p;
  }
  nlohmann::json comparison = {{"paper", c.paper}};
  if (best != nullptr) {
    comparison["dense"] = {{"stages", best->stages},
                           {"micro_batches", best->micro_batches},
                           {"step_time_s", best->step_s},
                           {"bubble_fraction", best->run.schedule.bubble_fraction},
                           {"mfu", best->mfu},
                           {"days", best->days},
                           {"core_years", best->core_years},
                           {"parameters", best->run.parameters}};
    if (c.trace) {
      pipeline::GPipeOptions g;
      g.stages = best->stages;
      g.micro_batches = best->micro_batches;
      g.placement = c.placement;
      report::WriteChromeTrace(pipeline::GPipeTrace(best->run, g), ctx.out_dir + "/trace.json");
    }
  }
  if (c.has_moe) {
    progress.Start("MoE reference");
    try {
      const TrainingPointResult moe = RunTrainingPoint(c.moe, "moe_reference");
      comparison["moe"] = {{"status", moe.status},
                           {"step_time_s", moe.step_s},
                           {"mfu", moe.mfu},
                           {"days", moe.days},
                           {"core_years", moe.core_years},
                           {"parameters", moe.run.parameters}};
      if (best != nullptr && moe.status == std::string(kPointOk) && moe.core_years > 0) {
        comparison["dense_over_moe_core_years"] = best->core_years / moe.core_years;
      }
      CountPoint(summary, moe.status);
    } catch (const Error& e) {
      comparison["moe"] = {{"status", kPointFailed}, {"error", e.what()}};
      progress.Note(c.name + ": MoE reference failed: " + e.what());
      CountPoint(summary, kPointFailed);
    }
    progress.Step("MoE reference");
  }
  if (c.paper.contains("dense_core_years") && c.paper.contains("moe_core_years")) {
    comparison["paper_dense_over_moe_core_years"] =
        c.paper["dense_core_years"].get<double>() / c.paper["moe_core_years"].get<double>();
  }

  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "dense_baseline"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"resolved",
                          {{"model", model.ToJson()},
                           {"sim", options.ToJson()},
                           {"optimizer", c.optimizer.ToJson()},
                           {"placement", pipeline::GPipePlacementName(c.placement)},
                           {"batch_tokens", c.batch_tokens},
                           {"tokens", c.tokens}}},
                         {"comparison", comparison},
                         {"points", points_json}});
  if (c.plot) WritePlot(ctx, c, points);
  return summary;
}

}  // namespace podsim::experiments
