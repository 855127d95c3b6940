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
#include "ir/autodiff.h"
#include "ir/text.h"
#include "models/gshard_model.h"
#include "models/moe_loss.h"
#include "models/training_step.h"

namespace podsim::cli {

namespace {

constexpr const char* kTrainStepUsage =
    "usage: podsim train-step [--config FILE.json] [--devices D] [--layers L] [--preset NAME]\n"
    "                         [--toy] [--optimizer KIND] [-o OUT.hlo|OUT.pb]\n\n"
    "Builds one training step of the MoE layer pair (token embeddings, a Transformer layer, an\n"
    "MoE layer, a shared softmax with cross-entropy plus the auxiliary load-balancing loss) or,\n"
    "with --layers, of the whole encoder-decoder model of L layers (L/2 + L/2, every other FFN\n"
    "MoE, each side a counted loop over stacked weights): forward, backward and the optimizer\n"
    "update of every weight, annotated as GShard does for D\n"
    "partitions (groups and experts split, everything else replicated) with the shardings\n"
    "propagated so the backward pass mirrors the forward. Prints it (or writes OUT), and a\n"
    "summary on standard error. Entry parameters: tokens, targets, the weights, the optimizer\n"
    "state, step (s32, the steps already taken); root: tuple(loss, [gradients with\n"
    "--gradients,] updated weights, updated state), the updated values donated\n"
    "(input_output_alias: written over their parameters).\n\n"
    "--config: {\"model\": {sizes as in an experiment's model}, \"loss\": {\"vocab_size\": V,\n"
    "\"aux_loss_coefficient\": k}, \"optimizer\": {\"kind\": \"adafactor\"|\"adam\"|\"sgd\", "
    "...}}\n"
    "(docs/training.md); the whole model (--layers, --preset, or a model with \"preset\" or\n"
    "\"num_layers\") also takes preset, num_layers, moe_every, experts, groups or batch_tokens,\n"
    "capacity_factor, source_vocab, target_vocab, dropout, weight_dtype, and the loss only\n"
    "aux_loss_coefficient. --preset: 128E,12L, 128E,36L, 512E,12L, 512E,36L, 2048E,12L,\n"
    "2048E,24L, 2048E,36L, 2048E,60L (E experts on D = E cores, Table 3's batch).\n"
    "Default: the paper's sizes on D cores (G = E = D), V = 32000 (the\n"
    "whole model: 64000 source, 32000 target, bf16 activations, f32 weights); --toy:\n"
    "G = E = max(D, 2), S = 8, M = 16, H = 32, 2 heads of 8, V = 32 (the whole model: 16 and\n"
    "12, every FFN MoE, f32), for podsim check.\n";

}  // namespace

int TrainStepCommand(const Args& args) {
  po::options_description desc("podsim train-step options");
  desc.add_options()("help,h", "show this help")("config", po::value<std::string>(),
                                                 "JSON: model, loss and optimizer")(
      "devices", po::value<int64_t>(), "partitions D (default 4, or a preset's E)")(
      "layers", po::value<int64_t>(), "the whole model with L layers (encoder + decoder)")(
      "preset", po::value<std::string>(), "the whole model as a paper configuration, e.g. 128E,36L")(
      "toy", "toy sizes instead of the paper's")(
      "optimizer", po::value<std::string>(), "adafactor (default), adam or sgd")(
      "gradients", "also return the gradients (their memory then lasts to the step's end)")(
      "remat", po::value<std::string>()->default_value("per-layer"),
      "what layer loops save for the backward pass: none (every value), selective (matmul\n"
      "outputs), per-layer (each layer's input; the rest recomputed)")(
      "output,o", po::value<std::string>(), "write the module here (.hlo text or .pb)");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!ParseOptions(args, desc, pos, vm)) {
    std::cout << kTrainStepUsage << "\n" << desc;
    return 0;
  }
  nlohmann::json config = nlohmann::json::object();
  std::string config_file;
  if (vm.count("config")) {
    config_file = vm["config"].as<std::string>();
    config = ReadJsonFile(config_file);
  }
  const bool toy = vm.count("toy") > 0;
  const bool preset = vm.count("preset") > 0;
  const nlohmann::json* model_json =
      config.is_object() && config.contains("model") ? &config["model"] : nullptr;
  const bool whole = vm.count("layers") > 0 || preset ||
                     (model_json != nullptr && model_json->is_object() &&
                      (model_json->contains("preset") || model_json->contains("num_layers")));
  if (preset && toy) throw Error("--preset: a paper configuration has no toy size");
  models::GShardModelConfig full;
  if (preset) full = models::PresetModelConfig(vm["preset"].as<std::string>());
  int64_t d = vm.count("devices") ? vm["devices"].as<int64_t>()
                    : preset            ? full.layer.num_experts
                                        : 4;
  if (d < 1) throw Error("--devices: must be >= 1, got " + std::to_string(d));
  if (!preset) full = toy ? models::ToyModelConfig(d) : models::PaperModelConfig(d, 12);
  full.layer.num_devices = d;
  models::MoeLayerConfig model = models::PaperMoeConfig(d);
  models::MoeLossConfig loss;
  loss.vocab_size = 32000;
  if (toy) {
    model = models::ToyMoeConfig();
    model.num_groups = model.num_experts = std::max<int64_t>(2, d);
    model.num_devices = d;
    loss.vocab_size = 32;
  }
  if (vm.count("layers")) full.num_layers = vm["layers"].as<int64_t>();
  models::OptimizerConfig optimizer;
  if (vm.count("config")) {
    JsonReader r(config, config_file);
    if (r.Has("model")) {
      if (whole) {
        full = models::GShardModelConfig::FromJson(r.Value("model"), "model", full);
        // A preset runs on one core per expert unless --devices says otherwise.
        if (!vm.count("devices") && model_json->contains("preset")) d = full.layer.num_experts;
        full.layer.num_devices = d;
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
  models::TrainingStepOptions step_options;
  step_options.num_partitions = d;
  step_options.layer_stacked = stacked;
  if (whole) step_options.micro_batches = full.micro_batches;
  step_options.return_gradients = vm.count("gradients") > 0;
  try {
    step_options.remat = ir::ParseLoopRemat(vm["remat"].as<std::string>());
  } catch (const Error& e) {
    throw ConfigError(std::string("--remat: ") + e.what());
  }
  models::TrainingStep step = models::BuildTrainingStep(
      *loss_module, models::FloatParameters(*loss_module), optimizer, step_options);
  std::cerr << "train-step: " << step.trainable.size() << " weights, " << step.state.size()
            << " " << models::OptimizerName(optimizer.kind) << " state tensors, "
            << step.module->InstructionCount() << " instructions, annotated for " << d
            << " partitions, remat " << ir::LoopRematName(step_options.remat) << "\n";
  if (vm.count("output")) {
    SaveModule(*step.module, vm["output"].as<std::string>());
  } else {
    std::cout << ir::PrintModule(*step.module);
  }
  return 0;
}

}  // namespace podsim::cli
