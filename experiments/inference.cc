// The "inference" experiment: translation with the GShard MoE Transformer on a pod, as a
// serving capacity planner asks about it. For each point (a model on a topology) and each batch
// size, the prefill (the encoder and the decoder's cross-attention caches, once per batch) and
// one flat-beam decode step (models/decode.h) are partitioned for every core and simulated:
//   per-token latency   the decode step's time (every step costs the same: static shapes)
//   sentence latency    prefill + max_len decode steps
//   throughput          batch / step time: target tokens per second, one per sentence per step
//   memory              the decode step's peak per core; its entry parameters (weights, the KV
//                       caches, the search state); the KV caches alone
// A point whose step does not fit a core's HBM is "oom" in every output, naming where.
//
// Config keys:
//   points      [{"name": ..., "model": <model JSON, as training_step's>, "topology": preset or
//               file, "topology_overrides": {...}}, ...]
//   batches     [1, 16, 128, ...]: sentences decoded together
//   inference   {"beam": W, "source_len": Ls, "max_len": T} (models::DecodeConfig)
//   sim         sim options (the topology's device unless it names one)

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/config.h"
#include "base/csv.h"
#include "base/error.h"
#include "base/format.h"
#include "base/io.h"
#include "experiments/runners.h"
#include "experiments/training_point.h"
#include "models/decode.h"
#include "partitioner/spmd_partitioner.h"
#include "report/plot.h"
#include "report/progress.h"
#include "sim/program/simulate.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

struct InferencePoint {
  std::string name;
  nlohmann::json model;
  std::string topology;
  nlohmann::json topology_overrides = nlohmann::json::object();
};

struct InferenceConfig {
  std::string name = "inference";
  std::vector<InferencePoint> points;
  std::vector<int64_t> batches;
  models::DecodeConfig decode;  // beam, source_len, max_len
  nlohmann::json sim = nlohmann::json::object();

  static InferenceConfig FromJson(const nlohmann::json& j) {
    InferenceConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    c.name = r.String("name", c.name);
    const nlohmann::json& ps = r.Value("points");
    if (!ps.is_array() || ps.empty()) FailAt(r.PathOf("points"), "must be a non-empty array");
    for (size_t k = 0; k < ps.size(); ++k) {
      JsonReader p(ps[k], IndexPath(r.PathOf("points"), k));
      InferencePoint x;
      x.topology = p.String("topology");
      x.name = p.String("name", x.topology);
      x.model = p.Value("model");
      if (p.Has("topology_overrides")) x.topology_overrides = p.Value("topology_overrides");
      p.Finish();
      c.points.push_back(std::move(x));
    }
    const nlohmann::json& bs = r.Value("batches");
    if (!bs.is_array() || bs.empty()) FailAt(r.PathOf("batches"), "must be a non-empty array");
    for (size_t k = 0; k < bs.size(); ++k) {
      c.batches.push_back(
          AsInt(bs[k], IndexPath(r.PathOf("batches"), k), Limit::Between(1, 1 << 24)));
    }
    if (r.Has("inference")) {
      // DecodeConfig reads a batch too; here every batch comes from `batches`, and one given
      // here would be silently replaced.
      if (r.Value("inference").is_object() && r.Value("inference").contains("batch")) {
        FailAt(r.PathOf("inference") + ".batch",
               "not read here: the batch sizes are the experiment's \"batches\" list");
      }
      c.decode = models::DecodeConfig::FromJson(r.Value("inference"), r.PathOf("inference"), {});
    }
    if (r.Has("sim")) c.sim = r.Value("sim");
    r.Finish();
    // Every (point, batch) must be buildable: errors now, naming the point.
    for (size_t k = 0; k < c.points.size(); ++k) {
      for (int64_t batch : c.batches) c.Decode(k, batch);
    }
    return c;
  }

  std::string PointPath(size_t k) const { return IndexPath(".points", k); }

  // The decode config of point k at `batch`: ConfigError naming the point if it cannot run.
  models::DecodeConfig Decode(size_t k, int64_t batch) const {
    const InferencePoint& p = points[k];
    const std::string path = PointPath(k);
    const nlohmann::json tj = PointTopologyJson(p.topology, p.topology_overrides, path);
    const int64_t cores = topo::TopologyConfig::FromJson(tj, path + ".topology").NumCores();
    models::DecodeConfig d = decode;
    d.batch = batch;
    d.model = models::GShardModelConfig::FromJson(p.model, path + ".model", {});
    d.model.layer.num_devices = cores;
    try {
      models::ValidateDecodeConfig(d);
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      FailAt(path, std::string(e.what()) + " (batch " + std::to_string(batch) + ")");
    }
    PointSimOptions(sim, tj, path, cores);
    return d;
  }
};

const std::vector<std::string> kInferenceColumns = {
    "point",      "topology", "cores",       "batch",        "beam",
    "prefill_ms", "token_ms", "sentence_ms", "tokens_per_s", "kv_cache_gib",
    "params_gib", "peak_gib", "status"};

struct Outcome {
  std::string status = kPointOk, error;
  double prefill_ms = 0, token_ms = 0, sentence_ms = 0, tokens_per_s = 0;
  int64_t peak = 0, params = 0;
  nlohmann::json categories = nlohmann::json::object();  // the decode step's, us
};

// Partitions `module` for the topology's cores and simulates it.
sim::RunResult Run(ir::Module& module, const topo::Topology& topology,
                   const sim::SimOptions& options) {
  const partitioner::PartitionResult spmd =
      partitioner::PropagateAndPartition(module, topology.num_cores());
  return sim::Simulate(*spmd.module, topology, options);
}

}  // namespace

void CheckInference(const nlohmann::json& config) { InferenceConfig::FromJson(config); }

RunSummary RunInference(const ExperimentContext& ctx) {
  const InferenceConfig c = InferenceConfig::FromJson(ctx.config);
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(kInferenceColumns);
  nlohmann::json rows = nlohmann::json::array();
  report::Progress progress(c.name, static_cast<int64_t>(c.points.size() * c.batches.size()));
  std::ostringstream data;  // plot.csv: one block per point (columns below)
  int64_t plotted = 0, ooms = 0;
  for (size_t k = 0; k < c.points.size(); ++k) {
    if (k > 0) data << "\n\n";
    const nlohmann::json tj =
        PointTopologyJson(c.points[k].topology, c.points[k].topology_overrides, c.PointPath(k));
    const std::unique_ptr<topo::Topology> topology =
        topo::LoadTopology(tj, c.PointPath(k) + ".topology");
    const sim::SimOptions options =
        PointSimOptions(c.sim, tj, c.PointPath(k), topology->num_cores());
    for (int64_t batch : c.batches) {
      const models::DecodeConfig d = c.Decode(k, batch);
      const models::KvCacheBytes kv = models::KvCacheBytesPerPartition(d);
      Outcome o;
      try {
        std::unique_ptr<ir::Module> prefill = models::BuildPrefill(d);
        std::unique_ptr<ir::Module> step = models::BuildDecodeStep(d);
        const sim::RunResult p = Run(*prefill, *topology, options);
        const sim::RunResult s = Run(*step, *topology, options);
        o.prefill_ms = p.step_time.micros() * 1e-3;
        o.token_ms = s.step_time.micros() * 1e-3;
        o.sentence_ms = o.prefill_ms + static_cast<double>(d.max_len) * o.token_ms;
        o.tokens_per_s = static_cast<double>(batch) / (o.token_ms * 1e-3);
        o.peak = s.memory.peak_bytes;
        o.params = s.memory.at_peak.parameters;
        for (const sim::CategoryResult& cat : s.categories) {
          if (cat.modelled() > Time()) {
            o.categories[cat.category] = {{"compute_us", cat.compute.micros()},
                                          {"communication_us", cat.communication.micros()}};
          }
        }
        // Either program out of HBM makes the point out of memory; the message names which.
        for (const auto& [program, r] : {std::pair{"prefill", &p}, std::pair{"decode step", &s}}) {
          if (r->memory.oom) {
            o.status = kPointOom;
            o.error +=
                (o.error.empty() ? "" : "; ") + std::string(program) + ": " + r->memory.message;
          }
        }
      } catch (const Error& e) {
        o.status = kPointFailed;
        o.error = e.what();
        progress.Note(c.name + ": " + c.points[k].name + " batch " + std::to_string(batch) +
                      " failed: " + e.what());
      }
      CountPoint(summary, o.status);
      const bool ok = o.status == kPointOk;
      const double gib = 1024.0 * 1024.0 * 1024.0;
      table.AddRow(
          {c.points[k].name, c.points[k].topology, std::to_string(d.partitions()),
           std::to_string(batch), std::to_string(d.beam), ok ? FormatFixed(o.prefill_ms, 3) : "",
           ok ? FormatFixed(o.token_ms, 3) : "", ok ? FormatFixed(o.sentence_ms, 3) : "",
           ok ? FormatFixed(o.tokens_per_s, 1) : "",
           FormatFixed(static_cast<double>(kv.total()) / gib, 3),
           o.status == kPointFailed ? "" : FormatFixed(static_cast<double>(o.params) / gib, 3),
           o.status == kPointFailed ? "" : FormatFixed(static_cast<double>(o.peak) / gib, 3),
           o.status});
      nlohmann::json row = {
          {"point", c.points[k].name},
          {"topology", c.points[k].topology},
          {"cores", d.partitions()},
          {"batch", batch},
          {"padded_batch", d.SentencesPerGroup() * d.partitions()},
          {"beam", d.beam},
          {"source_len", d.source_len},
          {"max_len", d.max_len},
          {"tokens_per_group", d.HypothesesPerGroup()},
          {"capacity", models::DefaultCapacity(d.HypothesesPerGroup(), d.model.layer.num_experts)},
          {"kv_cache_bytes", {{"self", kv.self}, {"cross", kv.cross}}},
          {"status", o.status}};
      if (ok) {
        row["prefill_ms"] = o.prefill_ms;
        row["token_ms"] = o.token_ms;
        row["sentence_ms"] = o.sentence_ms;
        row["tokens_per_s"] = o.tokens_per_s;
        row["token_categories"] = o.categories;
      }
      if (o.status != kPointFailed) {
        row["peak_bytes"] = o.peak;
        row["params_bytes"] = o.params;
      }
      if (!o.error.empty()) row["error"] = o.error;
      rows.push_back(row);
      // batch, token ms, tokens/s, and 0 for an out-of-memory point (marked on the x axis).
      data << batch << ' ' << (ok ? FormatFixed(o.token_ms, 3) : "?") << ' '
           << (ok ? FormatFixed(o.tokens_per_s, 1) : "?") << ' '
           << (o.status == kPointOom ? "0" : "?") << '\n';
      plotted += ok || o.status == kPointOom;
      ooms += o.status == kPointOom;
      progress.Step(c.points[k].name + " batch " + std::to_string(batch));
    }
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "inference"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"points", rows}});
  std::ostringstream gp;
  gp << report::PaletteLinetypes() << "set multiplot layout 1,2 title '" << c.name
     << ": flat beam search, beam " << c.decode.beam << ", " << c.decode.max_len
     << " target tokens' noenhanced\n"
     << "set logscale x 2\nset xlabel 'batch (sentences)'\nset grid\nset key top left noenhanced\n"
     << "set ylabel 'per-token latency (ms)'\nset yrange [0:*]\nplot ";
  for (size_t k = 0; k < c.points.size(); ++k) {
    gp << (k ? ", " : "") << "'plot.csv' index " << k << " using 1:2 with linespoints pt 7 title '"
       << c.points[k].name << "'";
  }
  for (size_t k = 0; ooms > 0 && k < c.points.size(); ++k) {
    gp << ", 'plot.csv' index " << k << " using 1:4 with points pt 2 ps 2 lc rgb '#d62728' "
       << (k ? "notitle" : "title 'out of memory'");
  }
  gp << "\nset ylabel 'throughput (target tokens/s)'\nset logscale y 10\nset yrange [*:*]\nplot ";
  for (size_t k = 0; k < c.points.size(); ++k) {
    gp << (k ? ", " : "") << "'plot.csv' index " << k << " using 1:3 with linespoints pt 7 title '"
       << c.points[k].name << "'";
  }
  // Out-of-memory points at 1 token/s, the bottom of the log axis.
  for (size_t k = 0; ooms > 0 && k < c.points.size(); ++k) {
    gp << ", 'plot.csv' index " << k << " using 1:($4+1) with points pt 2 ps 2 lc rgb '#d62728' "
       << (k ? "notitle" : "title 'out of memory'");
  }
  gp << "\nunset multiplot\n";
  WriteFileAtomic(ctx.out_dir + "/plot.csv", data.str());
  if (plotted > 0) {
    report::RenderPlot(ctx.out_dir, "plot", gp.str(), 1300, 550);
  } else {
    progress.Note(c.name + ": no point ran, so no plot");
  }
  return summary;
}

}  // namespace podsim::experiments
