#pragma once
// A residual convolutional network for images too large for one core, spatially partitioned
// (GShard section 3.3.3 and Table 4: a convolution whose spatial dims are split exchanges halos
// with its neighbours, O(1) compute and O(1) CollectivePermute per device as the image grows
// with the device count).
//
//   ConvNetConfig c;                       // ResNet-18's layout on 8192x8192 images
//   c.mesh_rows = c.mesh_cols = 4;         // H over 4 rows of devices, W over 4 columns
//   std::unique_ptr<ir::Module> loss = BuildConvNetLoss(c);
//   TrainingStep step = BuildTrainingStep(*loss, FloatParameters(*loss), {}, StepOptions(16));
//
// The network (NHWC activations, HWIO kernels), ResNet-18's layout (He et al. 2016) with its
// last stage dilated instead of strided (as segmentation networks keep resolution):
//   stem      conv 7x7 stride 2 -> batch norm -> relu -> max pool 3x3 stride 2
//   stages    per stage `blocks` basic blocks: conv 3x3 -> BN -> relu -> conv 3x3 -> BN, plus the
//             skip (a 1x1 conv with BN where the block changes stride or channels) -> relu;
//             the first block of a stage has the stage's stride, every 3x3 conv its dilation
//   head      global average pool -> dense [C, classes] + bias -> softmax cross-entropy
// Images are H x W (8192 x 8192 by default: one alone needs 22 GiB to train on one TPU v3 core
// of 16), batch N = 8. Every padding is "same" (k - 1) * dilation, split low/high as XLA's SAME:
// an output of ceil(size / stride). Batch norm is the
// training-time form: per-channel mean and variance over the batch and both spatial dims (so a
// spatially split step all-reduces them, as a spatially partitioned TPU ResNet does), in f32, then
// scale and bias.
//
// Element types: activations and convolutions in `dtype`, weights in `weight_dtype` cast to
// `dtype` where used, batch-norm statistics, logits and the loss in f32.
//
// Entry parameters, in order: images [N, H, W, in_channels] (dtype), labels s32[N] (in
// [0, classes)), then the weights in network order: "stem.w", "stem.bn_scale", "stem.bn_bias",
// "s<i>.b<j>.conv1.w", ".bn1_scale", ".bn1_bias", ".conv2.w", ".bn2_scale", ".bn2_bias" and, on a
// projected skip, ".skip.w", ".skip_bn_scale", ".skip_bn_bias"; then "head.w" [C, classes] and
// "head.b" [classes].
//
// Annotations (when `annotate`): the images split on H over mesh_rows and on W over mesh_cols
// (devices row-major), labels and weights replicated; propagation carries the spatial split
// through the network and the partitioner adds the halo exchanges, the batch-norm statistics'
// AllReduces and the weight gradients' AllReduces. Scopes: "stem", "stage<i>", "head".

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/module.h"

namespace podsim::models {

struct ConvStage {
  int64_t channels = 64;
  int64_t blocks = 2;
  int64_t stride = 1;    // of the stage's first block
  int64_t dilation = 1;  // of every 3x3 convolution of the stage
};

struct ConvNetConfig {
  int64_t batch = 8;            // N images per step
  int64_t image_height = 8192;  // H
  int64_t image_width = 8192;   // W
  int64_t in_channels = 3;
  int64_t stem_channels = 64;
  std::vector<ConvStage> stages = {{64, 2, 1, 1}, {128, 2, 2, 1}, {256, 2, 2, 1}, {512, 2, 1, 2}};
  int64_t classes = 1000;
  ir::DType dtype = ir::DType::kBF16;
  ir::DType weight_dtype = ir::DType::kF32;
  int64_t mesh_rows = 1;  // H split this many ways
  int64_t mesh_cols = 1;  // W split this many ways
  bool annotate = true;
  uint64_t seed = 0;  // unused by the network (no dropout); kept for argument generation

  int64_t num_devices() const { return mesh_rows * mesh_cols; }

  // `base` with what a JSON object gives: batch, image_size (H = W, or [H, W]), in_channels,
  // stem_channels, stages
  // ([{channels, blocks, stride, dilation}]), classes, dtype, weight_dtype, mesh ([rows, cols]).
  // Unknown keys and bad values are ConfigErrors naming `path`.key.
  static ConvNetConfig FromJson(const nlohmann::json& json, const std::string& path,
                                ConvNetConfig base);
  nlohmann::json ToJson() const;
};

// A small network for tests (32x32 images, two stages of one block, the second strided and
// dilated, 8 channels, 5 classes, f32) split rows x cols.
ConvNetConfig ToyConvNetConfig(int64_t rows, int64_t cols);

// Throws podsim::Error naming the field ("model.stages[1].stride: ...") for a bad size.
void ValidateConvNetConfig(const ConvNetConfig& config, const std::string& path = "model");

// The loss module, verified. Root: f32[] loss.
std::unique_ptr<ir::Module> BuildConvNetLoss(const ConvNetConfig& config);

// What the training step updates: every float entry parameter but the images.
std::vector<std::string> ConvNetWeights(const ir::Module& loss);

}  // namespace podsim::models
