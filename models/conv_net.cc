#include "models/conv_net.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "base/config.h"
#include "base/error.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "models/moe_loss.h"
#include "models/naming.h"
#include "models/training_step.h"
#include "partitioner/annotations.h"

namespace podsim::models {

using ir::Builder;
using ir::DType;
using ir::Instruction;
using ir::ReduceKind;
using ir::Shape;
using ir::WindowDim;

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// XLA's SAME padding of one spatial dim: an output of ceil(n / stride), the total padding
// split with the extra element high.
WindowDim Same(int64_t n, int64_t k, int64_t stride, int64_t dilation) {
  const int64_t span = (k - 1) * dilation + 1;
  const int64_t out = CeilDiv(n, stride);
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - n);
  return WindowDim{k, stride, total / 2, total - total / 2, 1, dilation};
}

class NetBuilder {
 public:
  NetBuilder(const ConvNetConfig& c, ir::Module& module)
      : c_(c), b_(module.AddComputation("main", /*is_entry=*/true)) {}

  Instruction* Weight(const std::string& name, std::vector<int64_t> dims) {
    Instruction* w = b_.Parameter(next_parameter_++, Shape(c_.weight_dtype, std::move(dims)), name);
    if (c_.annotate) partitioner::Replicate(w);
    return w->shape.dtype == c_.dtype ? w : b_.Convert(w, c_.dtype);
  }

  // conv k x k (HWIO kernel "<name>.w") with SAME padding.
  Instruction* Conv(Instruction* x, const std::string& name, int64_t k, int64_t out, int64_t stride,
                    int64_t dilation) {
    const int64_t in = x->shape.dims[3];
    Instruction* w = Weight(name + ".w", {k, k, in, out});
    ir::ConvDims d;
    d.input_batch = 0;
    d.input_spatial = {1, 2};
    d.input_feature = 3;
    d.kernel_spatial = {0, 1};
    d.kernel_input_feature = 2;
    d.kernel_output_feature = 3;
    d.output_batch = 0;
    d.output_spatial = {1, 2};
    d.output_feature = 3;
    return Named(b_.Convolution(x, w, d,
                                {Same(x->shape.dims[1], k, stride, dilation),
                                 Same(x->shape.dims[2], k, stride, dilation)}),
                 name);
  }

  // Training-time batch norm over N, H, W in f32: (x - mean) * rsqrt(var + eps) * scale + bias.
  Instruction* BatchNorm(Instruction* x, const std::string& prefix) {
    const std::vector<int64_t>& dims = x->shape.dims;
    const int64_t channels = dims[3];
    Instruction* scale = Weight(prefix + "_scale", {channels});
    Instruction* bias = Weight(prefix + "_bias", {channels});
    Instruction* xf = x->shape.dtype == DType::kF32 ? x : b_.Convert(x, DType::kF32);
    const double count = static_cast<double>(dims[0] * dims[1] * dims[2]);
    Instruction* inv_count = b_.ConstantScalar(DType::kF32, 1.0 / count);
    auto per_channel = [&](Instruction* v) {
      return b_.Mul(b_.Reduce(v, {0, 1, 2}, ReduceKind::kAdd),
                    b_.BroadcastScalar(inv_count, {channels}));
    };
    Instruction* mean = per_channel(xf);
    Instruction* centred = b_.Sub(xf, b_.Broadcast(mean, dims, {3}));
    Instruction* var = per_channel(b_.Mul(centred, centred));
    Instruction* eps = b_.BroadcastScalar(b_.ConstantScalar(DType::kF32, 1e-5), {channels});
    Instruction* inv_std = b_.Rsqrt(b_.Add(var, eps));
    auto f32 = [&](Instruction* v) {
      return v->shape.dtype == DType::kF32 ? v : b_.Convert(v, DType::kF32);
    };
    Instruction* gain = b_.Mul(inv_std, f32(scale));
    Instruction* y =
        b_.Add(b_.Mul(centred, b_.Broadcast(gain, dims, {3})), b_.Broadcast(f32(bias), dims, {3}));
    return y->shape.dtype == c_.dtype ? y : b_.Convert(y, c_.dtype);
  }

  Instruction* Relu(Instruction* x) {
    return b_.Max(x, b_.BroadcastScalar(b_.ConstantScalar(x->shape.dtype, 0), x->shape.dims));
  }

  Instruction* Block(Instruction* x, const std::string& name, int64_t channels, int64_t stride,
                     int64_t dilation) {
    Instruction* h =
        Relu(BatchNorm(Conv(x, name + ".conv1", 3, channels, stride, dilation), name + ".bn1"));
    h = BatchNorm(Conv(h, name + ".conv2", 3, channels, 1, dilation), name + ".bn2");
    Instruction* skip = x;
    if (stride != 1 || x->shape.dims[3] != channels) {
      skip = BatchNorm(Conv(x, name + ".skip", 1, channels, stride, 1), name + ".skip_bn");
    }
    return Named(Relu(b_.Add(h, skip)), name);
  }

  std::unique_ptr<ir::Module> Build(std::unique_ptr<ir::Module> module) {
    const int64_t n = c_.batch;
    Instruction *x, *labels;
    {
      Builder::ScopeGuard scope(b_, "stem");
      x = b_.Parameter(next_parameter_++,
                       Shape(c_.dtype, {n, c_.image_height, c_.image_width, c_.in_channels}),
                       "images");
      labels = b_.Parameter(next_parameter_++, Shape(DType::kS32, {n}), "labels");
      if (c_.annotate) {
        std::vector<int64_t> devices(c_.num_devices());
        std::iota(devices.begin(), devices.end(), 0);
        partitioner::Shard(x, {1, c_.mesh_rows, c_.mesh_cols, 1}, devices);
        partitioner::Replicate(labels);
      }
      x = Relu(BatchNorm(Conv(x, "stem", 7, c_.stem_channels, 2, 1), "stem.bn"));
      Instruction* pooled = b_.ReduceWindow(x,
                                            {WindowDim{}, Same(x->shape.dims[1], 3, 2, 1),
                                             Same(x->shape.dims[2], 3, 2, 1), WindowDim{}},
                                            ReduceKind::kMax);
      x = Named(pooled, "stem.pool");
    }
    for (size_t s = 0; s < c_.stages.size(); ++s) {
      const ConvStage& st = c_.stages[s];
      Builder::ScopeGuard scope(b_, "stage" + std::to_string(s + 1));
      for (int64_t j = 0; j < st.blocks; ++j) {
        x = Block(x, "s" + std::to_string(s + 1) + ".b" + std::to_string(j + 1), st.channels,
                  j == 0 ? st.stride : 1, st.dilation);
      }
    }
    Builder::ScopeGuard scope(b_, "head");
    const int64_t channels = x->shape.dims[3];
    Instruction* xf = x->shape.dtype == DType::kF32 ? x : b_.Convert(x, DType::kF32);
    const double pixels = static_cast<double>(x->shape.dims[1] * x->shape.dims[2]);
    Instruction* pooled = Named(
        b_.Mul(b_.Reduce(xf, {1, 2}, ReduceKind::kAdd),
               b_.BroadcastScalar(b_.ConstantScalar(DType::kF32, 1.0 / pixels), {n, channels})),
        "global_pool");
    Instruction* w = Weight("head.w", {channels, c_.classes});
    Instruction* bias = Weight("head.b", {c_.classes});
    auto f32 = [&](Instruction* v) {
      return v->shape.dtype == DType::kF32 ? v : b_.Convert(v, DType::kF32);
    };
    Instruction* logits = Named(b_.Add(b_.Einsum("NC,CK->NK", pooled, f32(w)),
                                       b_.Broadcast(f32(bias), {n, c_.classes}, {1})),
                                "logits");
    b_.computation()->set_root(Named(AddSoftmaxCrossEntropy(b_, logits, labels), "loss"));
    ir::Verify(*module);
    return module;
  }

 private:
  const ConvNetConfig& c_;
  Builder b_;
  int64_t next_parameter_ = 0;
};

}  // namespace

ConvNetConfig ConvNetConfig::FromJson(const nlohmann::json& json, const std::string& path,
                                      ConvNetConfig base) {
  JsonReader r(json, path);
  ConvNetConfig& c = base;
  c.batch = r.Int("batch", c.batch, Limit::AtLeast(1));
  if (r.Has("image_size")) {
    const nlohmann::json& v = r.Value("image_size");
    if (v.is_array()) {
      const std::vector<int64_t> hw = r.IntArray("image_size", Limit::AtLeast(1));
      if (hw.size() != 2) r.Fail("image_size", "must be a size or [height, width]");
      c.image_height = hw[0];
      c.image_width = hw[1];
    } else {
      c.image_height = c.image_width = r.Int("image_size", Limit::AtLeast(1));
    }
  }
  c.in_channels = r.Int("in_channels", c.in_channels, Limit::AtLeast(1));
  c.stem_channels = r.Int("stem_channels", c.stem_channels, Limit::AtLeast(1));
  c.classes = r.Int("classes", c.classes, Limit::AtLeast(1));
  if (r.Has("dtype")) c.dtype = ir::ParseDType(r.Choice("dtype", {"f32", "bf16"}));
  if (r.Has("weight_dtype")) {
    c.weight_dtype = ir::ParseDType(r.Choice("weight_dtype", {"f32", "bf16"}));
  }
  if (r.Has("mesh")) {
    const std::vector<int64_t> mesh = r.IntArray("mesh", Limit::AtLeast(1));
    if (mesh.size() != 2) r.Fail("mesh", "must be [rows, cols]");
    c.mesh_rows = mesh[0];
    c.mesh_cols = mesh[1];
  }
  if (r.Has("stages")) {
    const nlohmann::json& stages = r.Value("stages");
    if (!stages.is_array() || stages.empty()) r.Fail("stages", "must be a non-empty array");
    c.stages.clear();
    for (size_t i = 0; i < stages.size(); ++i) {
      JsonReader s(stages[i], r.PathOf("stages") + "[" + std::to_string(i) + "]");
      ConvStage st;
      st.channels = s.Int("channels", Limit::AtLeast(1));
      st.blocks = s.Int("blocks", st.blocks, Limit::AtLeast(1));
      st.stride = s.Int("stride", st.stride, Limit::AtLeast(1));
      st.dilation = s.Int("dilation", st.dilation, Limit::AtLeast(1));
      s.Finish();
      c.stages.push_back(st);
    }
  }
  r.Finish();
  try {
    ValidateConvNetConfig(c, path);
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    throw ConfigError(e.what());
  }
  return c;
}

nlohmann::json ConvNetConfig::ToJson() const {
  nlohmann::json stages_json = nlohmann::json::array();
  for (const ConvStage& s : stages) {
    stages_json.push_back({{"channels", s.channels},
                           {"blocks", s.blocks},
                           {"stride", s.stride},
                           {"dilation", s.dilation}});
  }
  return {{"batch", batch},
          {"image_size", {image_height, image_width}},
          {"in_channels", in_channels},
          {"stem_channels", stem_channels},
          {"stages", stages_json},
          {"classes", classes},
          {"dtype", std::string(ir::DTypeName(dtype))},
          {"weight_dtype", std::string(ir::DTypeName(weight_dtype))},
          {"mesh", {mesh_rows, mesh_cols}}};
}

ConvNetConfig ToyConvNetConfig(int64_t rows, int64_t cols) {
  ConvNetConfig c;
  c.batch = 2;
  c.image_height = c.image_width = 32;
  c.in_channels = 3;
  c.stem_channels = 4;
  c.stages = {{4, 1, 1, 1}, {8, 1, 2, 2}};
  c.classes = 5;
  c.dtype = DType::kF32;
  c.weight_dtype = DType::kF32;
  c.mesh_rows = rows;
  c.mesh_cols = cols;
  return c;
}

void ValidateConvNetConfig(const ConvNetConfig& c, const std::string& path) {
  auto fail = [&](const std::string& field, const std::string& message) {
    throw Error(path + "." + field + ": " + message);
  };
  for (auto [field, v] : {std::pair<const char*, int64_t>{"batch", c.batch},
                          {"image_size", std::min(c.image_height, c.image_width)},
                          {"in_channels", c.in_channels},
                          {"stem_channels", c.stem_channels},
                          {"classes", c.classes}}) {
    if (v < 1) fail(field, "must be >= 1, got " + std::to_string(v));
  }
  if (c.mesh_rows < 1 || c.mesh_cols < 1) fail("mesh", "rows and columns must be >= 1");
  if (c.stages.empty()) fail("stages", "needs at least one stage");
  // The largest activation, the stem's convolution output [N, H/2, W/2, C], must have an
  // element count a 64-bit size holds with room for its bytes: N * (H/2)^2 * C < 2^56.
  const int64_t half_h = CeilDiv(c.image_height, 2), half_w = CeilDiv(c.image_width, 2);
  int64_t widest = c.stem_channels;
  for (const ConvStage& s : c.stages) widest = std::max(widest, s.channels);
  const double elements = static_cast<double>(c.batch) * static_cast<double>(half_h) *
                          static_cast<double>(half_w) *
                          static_cast<double>(std::max(widest, c.in_channels));
  if (elements >= 0x1p56) {
    fail("image_size", "the activations would hold about 2^" +
                           std::to_string(static_cast<int>(std::log2(elements))) +
                           " elements, beyond what podsim sizes (2^56)");
  }
  // The spatial size after the stem (conv stride 2, pool stride 2) and each stage's stride.
  int64_t rows = CeilDiv(half_h, 2), cols = CeilDiv(half_w, 2);
  for (size_t i = 0; i < c.stages.size(); ++i) {
    const ConvStage& s = c.stages[i];
    const std::string at = "stages[" + std::to_string(i) + "]";
    if (s.channels < 1) fail(at + ".channels", "must be >= 1");
    if (s.blocks < 1) fail(at + ".blocks", "must be >= 1");
    if (s.stride < 1) fail(at + ".stride", "must be >= 1");
    if (s.dilation < 1) fail(at + ".dilation", "must be >= 1");
    rows = CeilDiv(rows, s.stride);
    cols = CeilDiv(cols, s.stride);
  }
  // A split dim needs at least one row of the last feature map per partition.
  if (rows < c.mesh_rows || cols < c.mesh_cols) {
    fail("mesh", "the last feature map is " + std::to_string(rows) + "x" + std::to_string(cols) +
                     ", fewer rows or columns than the mesh's " + std::to_string(c.mesh_rows) +
                     "x" + std::to_string(c.mesh_cols));
  }
}

std::unique_ptr<ir::Module> BuildConvNetLoss(const ConvNetConfig& config) {
  ValidateConvNetConfig(config);
  auto module = std::make_unique<ir::Module>("conv_net_loss");
  NetBuilder net(config, *module);
  return net.Build(std::move(module));
}

std::vector<std::string> ConvNetWeights(const ir::Module& loss) {
  std::vector<std::string> weights;
  for (const std::string& name : FloatParameters(loss)) {
    if (name != "images") weights.push_back(name);
  }
  return weights;
}

}  // namespace podsim::models
