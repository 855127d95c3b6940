// The "spatial_partitioning" experiment (GShard section 3.3.3 and Table 4's convolution row):
// the training step of a convolutional network whose images are split over a 2D mesh of cores
// (models/conv_net.h), built, partitioned (halo exchanges, batch-norm statistics and weight
// gradients as AllReduces) and simulated per point, with the communication of each kind per
// device.
//
// Config keys:
//   model      models::ConvNetConfig JSON shared by every point (not image_size or mesh)
//   points     [{"series": name, "topology": preset or file, "mesh": [rows, cols],
//                "image_size": size or [H, W]}]: rows x cols must be the topology's cores
//   topology_overrides  object merged into every point's topology
//   sim        sim::SimOptions JSON; the device is the topology's unless it names one
//   optimizer  models::OptimizerConfig JSON (default Adafactor)
//   plot       true (default): plot.{png,svg} of step time and halo bytes per device against
//              partitions, one line per series
//   details    write each point's simulator tables to DIR/<series>-<k>/ (default false)
// Columns: per device, the halo exchange's CollectivePermutes (count, MiB sent, summed time),
// the AllReduces (batch-norm statistics, the pooled features and the weight gradients), the
// step's compute time, the per-core input tile, peak memory and MFU (models the FLOPs of
// 3 x the forward pass's convolutions and matmuls), and one_image_gib: the peak memory of the
// same step on one image, unpartitioned, on one core (above the HBM when an image needs
// splitting). An OOM point keeps its memory columns and says "oom"; its time columns stay
// empty, and the plot labels it.

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
#include "pipeline/training.h"
#include "report/plot.h"
#include "report/progress.h"
#include "report/run_report.h"
#include "topologies/load.h"

namespace podsim::experiments {

namespace {

const std::vector<std::string> kSpatialColumns = {
    "series",        "topology",     "partitions", "mesh",          "image",   "tile",
    "step_ms",       "compute_ms",   "permutes",   "halo_mib",      "halo_ms", "allreduces",
    "allreduce_mib", "allreduce_ms", "peak_gib",   "one_image_gib", "mfu",     "status"};

struct SpatialPoint {
  std::string series;
  std::string topology;
  int64_t rows = 1, cols = 1;
  int64_t height = 0, width = 0;
};

struct SpatialConfig {
  std::string name = "spatial_partitioning";
  nlohmann::json model = nlohmann::json::object();
  std::vector<SpatialPoint> points;
  nlohmann::json topology_overrides = nlohmann::json::object();
  nlohmann::json sim = nlohmann::json::object();
  models::OptimizerConfig optimizer;
  bool plot = true;
  bool details = false;

  static SpatialConfig FromJson(const nlohmann::json& j) {
    SpatialConfig c;
    JsonReader r(j, "");
    r.String("experiment");
    c.name = r.String("name", c.name);
    c.model = r.ObjectValue("model");
    for (const char* key : {"image_size", "mesh"}) {
      if (c.model.contains(key)) {
        FailAt(r.PathOf("model") + "." + key, "is per point (points[k]." + std::string(key) + ")");
      }
    }
    const nlohmann::json& ps = r.Value("points");
    if (!ps.is_array() || ps.empty()) FailAt(r.PathOf("points"), "must be a non-empty array");
    for (size_t k = 0; k < ps.size(); ++k) {
      const std::string path = IndexPath(r.PathOf("points"), k);
      JsonReader p(ps[k], path);
      SpatialPoint pt;
      pt.series = p.String("series", "spatial");
      pt.topology = p.String("topology");
      const std::vector<int64_t> mesh = p.IntArray("mesh", Limit::AtLeast(1));
      if (mesh.size() != 2) p.Fail("mesh", "must be [rows, cols]");
      pt.rows = mesh[0];
      pt.cols = mesh[1];
      // image_size is read by the model (a size or [H, W]).
      nlohmann::json image = {{"image_size", p.Value("image_size")}};
      p.Finish();
      const models::ConvNetConfig m = models::ConvNetConfig::FromJson(image, path, {});
      pt.height = m.image_height;
      pt.width = m.image_width;
      c.points.push_back(std::move(pt));
    }
    c.topology_overrides = r.ObjectValue("topology_overrides");
    c.sim = r.ObjectValue("sim");
    if (r.Has("optimizer")) {
      c.optimizer = models::OptimizerConfig::FromJson(r.Value("optimizer"), r.PathOf("optimizer"),
                                                      c.optimizer);
    }
    c.plot = r.Bool("plot", c.plot);
    c.details = r.Bool("details", c.details);
    r.Finish();
    // Errors now, not after the first point ran.
    for (size_t k = 0; k < c.points.size(); ++k) c.Check(k);
    return c;
  }

  models::ConvNetConfig Model(size_t k) const {
    const SpatialPoint& p = points[k];
    nlohmann::json m = model;
    m["image_size"] = {p.height, p.width};
    m["mesh"] = {p.rows, p.cols};
    return models::ConvNetConfig::FromJson(m, IndexPath("points", k) + ".model", {});
  }

  // The point's topology JSON and sim options; ConfigError when the mesh does not cover it.
  std::pair<nlohmann::json, sim::SimOptions> Resolve(size_t k) const {
    const std::string path = IndexPath("points", k);
    const nlohmann::json topology = PointTopologyJson(points[k].topology, topology_overrides, path);
    const int64_t cores = topo::TopologyConfig::FromJson(topology, path + ".topology").NumCores();
    if (points[k].rows * points[k].cols != cores) {
      FailAt(path + ".mesh", std::to_string(points[k].rows) + "x" + std::to_string(points[k].cols) +
                                 " partitions, but '" + points[k].topology + "' has " +
                                 std::to_string(cores) + " cores");
    }
    return {topology, PointSimOptions(sim, topology, path, cores)};
  }

  void Check(size_t k) const {
    Model(k);
    Resolve(k);
  }
};

double Mib(double bytes) { return bytes / static_cast<double>(1 << 20); }

struct PlotPoint {
  std::string series;
  int64_t partitions = 0;
  double step_ms = -1, halo_mib = -1;  // -1: the point did not run (its status says why)
  std::string status = kPointFailed;
};

void WritePlot(const ExperimentContext& ctx, const SpatialConfig& c,
               const std::vector<PlotPoint>& points) {
  // One gnuplot data block per series (separated by two blank lines), in first-seen order.
  std::vector<std::string> series;
  for (const PlotPoint& p : points) {
    if (std::find(series.begin(), series.end(), p.series) == series.end())
      series.push_back(p.series);
  }
  std::ostringstream data, gp;
  for (size_t s = 0; s < series.size(); ++s) {
    if (s > 0) data << "\n\n";
    data << "# " << series[s] << "\npartitions step_ms halo_mib\n";
    for (const PlotPoint& p : points) {
      if (p.series != series[s] || p.step_ms < 0) continue;  // OOM and failed points: no time
      data << p.partitions << ' ' << FormatFixed(p.step_ms, 3) << ' ' << FormatFixed(p.halo_mib, 3)
           << '\n';
    }
  }
  WriteFileAtomic(ctx.out_dir + "/plot.csv", data.str());
  gp << report::PaletteLinetypes(2) << "set multiplot layout 1,2 title '" << c.name
     << ": spatially partitioned training step (a point that did not run is labelled with its "
        "status)' noenhanced\n"
     << "set logscale x 2\nset xlabel 'spatial partitions (cores)'\nset grid\nset key top left\n"
     << "set yrange [0:*]\nset offsets graph 0.05, graph 0.05, 0, 0\n";
  int label = 0;
  for (const PlotPoint& p : points) {
    if (p.step_ms >= 0) continue;
    ++label;
    gp << "set label " << label << " '" << p.series << ": " << p.status << "' at first "
       << p.partitions << ", graph " << FormatFixed(0.04 + 0.05 * static_cast<double>(label % 4), 2)
       << " center tc rgb '#444444' noenhanced\n";
  }
  gp << "set ylabel 'step time (ms)'\nplot ";
  for (size_t s = 0; s < series.size(); ++s) {
    gp << (s ? ", " : "") << "'plot.csv' index " << s << " using 1:2 with linespoints lt " << s + 1
       << " pt 7 title '" << series[s] << "' noenhanced";
  }
  gp << "\nset ylabel 'halo exchange per device (MiB sent)'\nplot ";
  for (size_t s = 0; s < series.size(); ++s) {
    gp << (s ? ", " : "") << "'plot.csv' index " << s << " using 1:3 with linespoints lt " << s + 1
       << " pt 7 title '" << series[s] << "' noenhanced";
  }
  gp << "\nunset multiplot\n";
  report::RenderPlot(ctx.out_dir, "plot", gp.str(), 1200, 550);
}

}  // namespace

void CheckSpatialPartitioning(const nlohmann::json& config) { SpatialConfig::FromJson(config); }

RunSummary RunSpatialPartitioning(const ExperimentContext& ctx) {
  const SpatialConfig c = SpatialConfig::FromJson(ctx.config);
  RunSummary summary;
  summary.name = c.name;
  CsvTable table(kSpatialColumns);
  nlohmann::json points = nlohmann::json::array();
  std::vector<PlotPoint> plotted;
  report::Progress progress(c.name, static_cast<int64_t>(c.points.size()));
  for (size_t k = 0; k < c.points.size(); ++k) {
    const SpatialPoint& pt = c.points[k];
    const std::string label = pt.series + " " + pt.topology;
    progress.Start(label);
    const std::string mesh = std::to_string(pt.rows) + "x" + std::to_string(pt.cols);
    const std::string image = std::to_string(pt.height) + "x" + std::to_string(pt.width);
    const std::string tile = std::to_string((pt.height + pt.rows - 1) / pt.rows) + "x" +
                             std::to_string((pt.width + pt.cols - 1) / pt.cols);
    std::vector<std::string> row = {pt.series, pt.topology, std::to_string(pt.rows * pt.cols),
                                    mesh,      image,       tile};
    row.resize(kSpatialColumns.size());
    auto set = [&](const std::string& column, std::string value) {
      row[std::find(kSpatialColumns.begin(), kSpatialColumns.end(), column) -
          kSpatialColumns.begin()] = std::move(value);
    };
    nlohmann::json point = {{"series", pt.series},
                            {"topology", pt.topology},
                            {"mesh", {pt.rows, pt.cols}},
                            {"image_size", {pt.height, pt.width}}};
    PlotPoint plot_point{pt.series, pt.rows * pt.cols};
    try {
      const models::ConvNetConfig model = c.Model(k);
      auto [topology_json, options] = c.Resolve(k);
      const std::unique_ptr<topo::Topology> topology =
          topo::LoadTopology(topology_json, IndexPath("points", k) + ".topology");
      const pipeline::ConvTrainingRun run =
          pipeline::RunConvNetTraining(model, c.optimizer, *topology, options);
      const sim::RunResult& r = run.result;
      const std::string status = PointStatus(r);
      CountPoint(summary, status);
      if (c.details) {
        report::WriteResults(r, ctx.out_dir + "/" + pt.series + "-" + std::to_string(k));
      }
      auto traffic = [&](const char* kind) {
        auto it = run.traffic.find(kind);
        return it == run.traffic.end() ? pipeline::ConvTrainingRun::Traffic{} : it->second;
      };
      const auto halo = traffic("collective-permute");
      const auto reduce = traffic("all-reduce");
      const double step_s = r.step_time.micros() * 1e-6;
      const double mfu = run.model_flops / (static_cast<double>(pt.rows * pt.cols) * step_s *
                                            options.device.matrix_bf16.value);
      set("permutes", std::to_string(halo.count));
      set("halo_mib", FormatFixed(Mib(static_cast<double>(halo.bytes)), 3));
      set("allreduces", std::to_string(reduce.count));
      set("allreduce_mib", FormatFixed(Mib(static_cast<double>(reduce.bytes)), 3));
      set("peak_gib", FormatFixed(static_cast<double>(r.memory.peak_bytes) / (1 << 30), 3));
      set("one_image_gib",
          FormatFixed(static_cast<double>(run.one_image.peak_bytes) / (1 << 30), 3));
      set("status", status);
      plot_point.status = status;
      if (status == kPointOk) {
        set("step_ms", FormatFixed(step_s * 1e3, 3));
        set("compute_ms", FormatFixed(r.compute_time.micros() * 1e-3, 3));
        set("halo_ms", FormatFixed(halo.time_us * 1e-3, 3));
        set("allreduce_ms", FormatFixed(reduce.time_us * 1e-3, 3));
        set("mfu", FormatFixed(mfu, 3));
        plot_point.step_ms = step_s * 1e3;
        plot_point.halo_mib = Mib(static_cast<double>(halo.bytes));
      } else {
        progress.Note(c.name + ": " + label + ": " + r.memory.message);
      }
      nlohmann::json traffic_json = nlohmann::json::object();
      for (const auto& [kind, t] : run.traffic) {
        traffic_json[kind] = {{"executions", t.count}, {"bytes", t.bytes}, {"time_us", t.time_us}};
      }
      nlohmann::json categories = nlohmann::json::object();
      for (const auto& cat : r.categories) {
        categories[cat.category] = {{"compute_us", cat.compute.micros()},
                                    {"communication_us", cat.communication.micros()},
                                    {"roofline_us", cat.roofline.micros()}};
      }
      point.update({{"status", status},
                    {"categories", categories},
                    {"resolved_model", model.ToJson()},
                    {"parameters", run.parameters},
                    {"model_flops", run.model_flops},
                    {"step_time_us", r.step_time.micros()},
                    {"compute_time_us", r.compute_time.micros()},
                    {"exposed_communication_us", r.exposed_communication.micros()},
                    {"mfu", mfu},
                    {"peak_memory_bytes", r.memory.peak_bytes},
                    {"peak_instruction", r.memory.peak_instruction},
                    {"one_image_one_core",
                     {{"peak_memory_bytes", run.one_image.peak_bytes},
                      {"fits", !run.one_image.oom},
                      {"capacity_bytes", run.one_image.capacity_bytes}}},
                    {"collectives_per_device", traffic_json}});
      if (status != kPointOk) point["error"] = r.memory.message;
    } catch (const Error& e) {
      progress.Note(c.name + ": " + label + " failed: " + e.what());
      CountPoint(summary, kPointFailed);
      set("status", kPointFailed);
      point.update({{"status", kPointFailed}, {"error", e.what()}});
    }
    table.AddRow(row);
    plotted.push_back(plot_point);
    points.push_back(point);
    progress.Step(label);
  }
  WriteFileAtomic(ctx.out_dir + "/results.csv", table.ToString());
  WriteResultsJson(ctx, {{"experiment", "spatial_partitioning"},
                         {"name", c.name},
                         {"config", ctx.config},
                         {"summary", summary.ToString()},
                         {"resolved", ResolvedTrainingSetup(c.sim, c.optimizer)},
                         {"points", points}});
  if (c.plot) WritePlot(ctx, c, plotted);
  return summary;
}

}  // namespace podsim::experiments
