// podsim train-step [--config FILE.json] [--devices D] [--layers L] [--toy] [--optimizer KIND]
// [-o OUT]: emits the training-step module (models/training_step.h) of the MoE layer pair or,
// with --layers, of the whole encoder-decoder model (models/gshard_model.h), as IR text or
// protobuf, annotated for D partitions, ready for podsim partition, check and simulate.

#include <iostream>
#include <set>
#include <nlohmann/json.hpp>

#include "base/config.h"
#include "base/error.h"
#include "cli/commands.h"
#include "cli/module_io.h"
#include "cli/options.h"
#include "ir/text.h"
#include "models/gshard_model.h"
#include "models/moe_loss.h"
#include "models/training_step.h"

namespace podsim::cli {

namespace {

constexpr const char* kUsage =
    "usage: podsim train-step [--config FILE.json] [--devices D] [--layers L] [--toy]\n"
    "                         [--optimizer KIND] [-o OUT.hlo|OUT.pb]\n\n"
    "Builds one training step of the MoE layer pair (token embeddings, a Transformer layer, an\n"
    "MoE layer, a shared softmax with cross-entropy plus the auxiliary load-balancing loss) or,\n"
    "with --layers, of the whole encoder-decoder model of L layers (L/2 + L/2, every other FFN\n"
    "MoE, each side a counted loop over stacked weights): forward, backward and the optimizer\n"
    "update of every weight, annotated as GShard does for D\n"
    "partitions (groups and experts split, everything else replicated) with the shardings\n"
    "propagated so the backward pass mirrors the forward. Prints it (or writes OUT), and a\n"
    "summary on standard error. Entry parameters: tokens, targets, the weights, the optimizer\n"
    "state, step (s32, the steps already taken); root: tuple(loss, gradients, updated weights,\n"
    "updated state).\n\n"
    "--config: {\"model\": {sizes as in an experiment's model}, \"loss\": {\"vocab_size\": V,\n"
    "\"aux_loss_coefficient\": k}, \"optimizer\": {\"kind\": \"adafactor\"|\"adam\"|\"sgd\", ...}}\n"
    "(docs/training.md); with --layers the model also takes num_layers, moe_every,\n"
    "source_vocab, target_vocab, dropout, weight_dtype, and the loss only\n"
    "aux_loss_coefficient. Default: the paper's sizes on D cores (G = E = D), V = 32000 (the\n"
    "whole model: 64000 source, 32000 target, bf16 activations, f32 weights); --toy:\n"
    "G = E = max(D, 2), S = 8, M = 16, H = 32, 2 heads of 8, V = 32 (the whole model: 16 and\n"
    "12, every FFN MoE, f32), for podsim check.\n";

}  // namespace

int TrainStepCommand(const Args& args) {
  po::options_description desc("podsim train-step options");
  desc.add_options()("help,h", "show this help")("config", po::value<std::string>(),
                                                 "JSON: model, loss and optimizer")(
      "devices", po::value<int64_t>()->default_value(4), "partitions D (G = E = D)")(
      "layers", po::value<int64_t>(), "the whole model with L layers (encoder + decoder)")(
      "toy", "toy sizes instead of the paper's")(
      "optimizer", po::value<std::string>(), "adafactor (default), adam or sgd")(
      "output,o", po::value<std::string>(), "write the module here (.hlo text or .pb)");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!ParseOptions(args, desc, pos, vm)) {
    std::cout << kUsage << "\n" << desc;
    return 0;
  }
  const int64_t d = vm["devices"].as<int64_t>();
  if (d < 1) throw Error("--devices: must be >= 1, got " + std::to_string(d));
  const bool toy = vm.count("toy") > 0;
  const bool whole = vm.count("layers") > 0;
  models::MoeLayerConfig model = models::PaperMoeConfig(d);
  models::MoeLossConfig loss;
  loss.vocab_size = 32000;
  models::GShardModelConfig full = models::PaperModelConfig(d, 12);
  if (toy) {
    model = models::ToyMoeConfig();
    model.num_groups = model.num_experts = std::max<int64_t>(2, d);
    model.num_devices = d;
    loss.vocab_size = 32;
    full = models::ToyModelConfig(d);
  }
  if (whole) full.num_layers = vm["layers"].as<int64_t>();
  models::OptimizerConfig optimizer;
  if (vm.count("config")) {
    const std::string file = vm["config"].as<std::string>();
    const nlohmann::json j = ReadJsonFile(file);
    JsonReader r(j, file);
    if (r.Has("model")) {
      if (whole) {
        full = models::GShardModelConfig::FromJson(r.Value("model"), "model", full);
      } else {
        model = models::MoeLayerConfig::FromJson(r.Value("model"), "model", model);
      }
    }
    if (r.Has("loss")) {
      JsonReader l(r.Value("loss"), "loss");
      if (!whole) loss.vocab_size = l.Int("vocab_size", loss.vocab_size, Limit::AtLeast(1));
      loss.aux_loss_coefficient =
          l.Double("aux_loss_coefficient", loss.aux_loss_coefficient, Limit::NonNegative());
      full.aux_loss_coefficient = loss.aux_loss_coefficient;
      l.Finish();
    }
    if (r.Has("optimizer")) {
      optimizer = models::OptimizerConfig::FromJson(r.Value("optimizer"), "optimizer", optimizer);
    }
    r.Finish();
  }
  if (vm.count("optimizer")) {
    optimizer = models::OptimizerConfig::FromJson(
        nlohmann::json{{"kind", vm["optimizer"].as<std::string>()}}, "--optimizer", optimizer);
  }
  std::set<std::string> stacked;
  auto loss_module = whole ? models::BuildGShardModelLoss(full, &stacked)
                           : models::BuildMoeLayerPairLoss(model, loss);
  models::TrainingStep step = models::BuildTrainingStep(
      *loss_module, models::FloatParameters(*loss_module), optimizer, d, "", stacked);
  std::cerr << "train-step: " << step.trainable.size() << " weights, " << step.state.size()
            << " " << models::OptimizerName(optimizer.kind) << " state tensors, "
            << step.module->InstructionCount() << " instructions, annotated for " << d
            << " partitions\n";
  if (vm.count("output")) {
    SaveModule(*step.module, vm["output"].as<std::string>());
  } else {
    std::cout << ir::PrintModule(*step.module);
  }
  return 0;
}

}  // namespace podsim::cli
