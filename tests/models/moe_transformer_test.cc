// The MoE Transformer layer pair builder: shapes of the key tensors at the paper's and the toy
// size, Figure 8 scopes on every instruction, annotations, an instruction count independent of
// E and D, bad configs, the demo IR files, and the SPMD partition of the annotated modules.

#include "models/moe_transformer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "ir/cost.h"
#include "ir/interpreter.h"
#include "ir/proto.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "models/scopes.h"
#include "partitioner/equivalence.h"
#include "partitioner/propagation.h"
#include "partitioner/spmd_partitioner.h"
#include "tests/models/models_test_util.h"

namespace podsim::models {
namespace {

using ir::DType;
using ir::Opcode;
using ir::Shape;
using ir::Sharding;
using testing::Find;
using testing::WithOpcode;

// Split dim `dim` of a rank-`rank` tensor over devices 0..n-1.
Sharding SplitSharding(int64_t rank, int64_t dim, int64_t n) {
  std::vector<int64_t> tiles(rank, 1);
  tiles[dim] = n;
  std::vector<int64_t> devices(n);
  for (int64_t k = 0; k < n; ++k) devices[k] = k;
  return Sharding::Tiled(tiles, devices);
}

Shape F32(std::vector<int64_t> dims) { return Shape(DType::kF32, std::move(dims)); }

// Instructions of the entry whose scope is `scope`, by opcode name.
std::map<std::string, int> OpsInScope(const ir::Module& m, std::string_view scope) {
  std::map<std::string, int> ops;
  for (const auto& i : m.entry()->instructions()) {
    if (i->scope == scope) ++ops[std::string(ir::OpcodeName(i->opcode))];
  }
  return ops;
}

std::map<std::string, int64_t> CollectiveCounts(const ir::Module& m) {
  std::map<std::string, int64_t> counts;
  for (const auto& i : m.entry()->instructions()) {
    if (ir::IsCollective(i->opcode)) ++counts[std::string(ir::OpcodeName(i->opcode))];
  }
  return counts;
}

TEST_CASE("paper size: key tensor shapes for 128 and 2048 experts, C = 2S/E") {
  for (int64_t d : {128, 2048}) {
    CAPTURE(d);
    const MoeLayerConfig c = PaperMoeConfig(d);
    const int64_t g = d, s = 2048, m = 1024, h = 8192, e = d, cap = 2 * 2048 / d;
    CHECK(ExpertCapacity(c) == cap);  // 32 at 128E, 2 at 2048E
    std::unique_ptr<ir::Module> mod = BuildMoeLayerPair(c);
    CHECK(Find(*mod, "x")->shape == F32({g, s, m}));
    CHECK(Find(*mod, "attention_wq")->shape == F32({m, 16, 128}));
    CHECK(Find(*mod, "attention_wo")->shape == F32({16, 128, m}));
    // 2048 tokens of a group = 4 sequences of 512; probs [G, sequences, heads, L, T].
    CHECK(Find(*mod, "attention_probs")->shape == F32({g, 4, 16, 512, 512}));
    CHECK(Find(*mod, "ffn_hidden")->shape == F32({g, s, h}));
    CHECK(Find(*mod, "wg")->shape == F32({m, e}));
    CHECK(Find(*mod, "wi")->shape == F32({e, m, h}));
    CHECK(Find(*mod, "wo")->shape == F32({e, h, m}));
    CHECK(Find(*mod, "gates")->shape == F32({g, s, e}));
    CHECK(Find(*mod, "second_expert_uniform")->shape == F32({g, s}));
    CHECK(Find(*mod, "combine_weights")->shape == F32({g, s, e, cap}));
    CHECK(Find(*mod, "dispatch_mask")->shape == F32({g, s, e, cap}));
    CHECK(Find(*mod, "dispatched_expert_inputs")->shape == F32({e, g, cap, m}));
    CHECK(Find(*mod, "expert_hidden")->shape == F32({e, g, cap, h}));
    CHECK(Find(*mod, "expert_outputs")->shape == F32({g, e, cap, m}));
    CHECK(Find(*mod, "moe_outputs")->shape == F32({g, s, m}));
    CHECK(mod->entry()->root() == Find(*mod, "moe_layer_out"));
    CHECK(mod->entry()->root()->shape == F32({g, s, m}));
    CHECK(mod->entry()->parameters().size() == 14);  // x, 2 x 4 attention, 2 FFN, wg, wi, wo
  }
}

TEST_CASE("toy size: the layer pair and the MoE layer verify, print and parse back") {
  for (bool annotate : {true, false}) {
    CAPTURE(annotate);
    MoeLayerConfig c = ToyMoeConfig();
    c.annotate = annotate;
    for (const auto& mod : {BuildMoeLayerPair(c), BuildMoeLayer(c)}) {
      ir::Verify(*mod);
      const std::string text = ir::PrintModule(*mod);
      std::unique_ptr<ir::Module> back = ir::ParseModule(text);
      CHECK(ir::PrintModule(*back) == text);
    }
  }
  const MoeLayerConfig c = ToyMoeConfig();
  std::unique_ptr<ir::Module> mod = BuildMoeLayer(c);
  CHECK(ExpertCapacity(c) == 4);  // 2 * 8 / 4
  CHECK(Find(*mod, "inputs")->shape == F32({4, 8, 16}));
  CHECK(Find(*mod, "dispatched_expert_inputs")->shape == F32({4, 4, 4, 16}));
  CHECK(Find(*mod, "expert_hidden")->shape == F32({4, 4, 4, 32}));
  CHECK(mod->entry()->root() == Find(*mod, "moe_outputs"));
  CHECK(mod->entry()->parameters().size() == 4);
}

TEST_CASE("every instruction carries one of the seven Figure 8 scopes") {
  MoeLayerConfig c = ToyMoeConfig();
  for (bool moe_attention : {true, false}) {
    c.moe_layer_attention = moe_attention;
    std::unique_ptr<ir::Module> mod = BuildMoeLayerPair(c);
    std::set<std::string_view> seen;
    for (const auto& i : mod->entry()->instructions()) {
      INFO("%" << i->name << " scope \"" << i->scope << "\"");
      CHECK(std::find(kFigure8Scopes.begin(), kFigure8Scopes.end(), i->scope) !=
            kFigure8Scopes.end());
      seen.insert(i->scope);
    }
    CHECK(seen.size() == 7);
  }
}

TEST_CASE("which ops go to which Figure 8 category") {
  std::unique_ptr<ir::Module> mod = BuildMoeLayerPair(ToyMoeConfig());
  // Two layers with attention: q, k, v, o projections each.
  CHECK(OpsInScope(*mod, kScopeProjections)["dot"] == 8);
  // QK^T and AV per layer; softmax exp; no other contraction.
  CHECK(OpsInScope(*mod, kScopeAttention)["dot"] == 4);
  CHECK(OpsInScope(*mod, kScopeAttention)["exponential"] == 2);
  CHECK(OpsInScope(*mod, kScopeTransformerFfn)["dot"] == 2);
  CHECK(OpsInScope(*mod, kScopeMoeFfn)["dot"] == 2);
  // The paper's three gate einsums: gating logits, dispatch and combine (and the softmax).
  CHECK(OpsInScope(*mod, kScopeGateEinsums)["dot"] == 3);
  CHECK(OpsInScope(*mod, kScopeGateEinsums)["exponential"] == 1);
  // The rest of Algorithm 1 goes with the cumsums: the top-2 selection, the random policy, the
  // masks and the two GSE,GSC->GSEC outer products building the combine / dispatch tensors.
  CHECK(OpsInScope(*mod, kScopeGateEinsums)["argmax"] == 0);
  CHECK(OpsInScope(*mod, kScopeGateCumsum)["argmax"] == 2);
  CHECK(OpsInScope(*mod, kScopeGateCumsum)["random-uniform"] == 1);
  CHECK(OpsInScope(*mod, kScopeGateCumsum)["cumsum"] == 2);
  CHECK(OpsInScope(*mod, kScopeGateCumsum)["dot"] == 2);
  // Only the two G <-> E layout changes.
  const std::map<std::string, int> dc = OpsInScope(*mod, kScopeDispatchCombine);
  CHECK(dc == std::map<std::string, int>{{"transpose", 2}});
  CHECK(Find(*mod, "dispatched_expert_inputs")->scope == kScopeDispatchCombine);
  CHECK(Find(*mod, "expert_outputs")->scope == kScopeDispatchCombine);
  for (const ir::Instruction* cumsum : WithOpcode(*mod, Opcode::kCumsum)) {
    CHECK(cumsum->exclusive);
    CHECK(cumsum->dimensions == std::vector<int64_t>{1});  // over S
  }
}

TEST_CASE("the instruction count depends on neither E nor D") {
  MoeLayerConfig small = ToyMoeConfig();  // D = E = G = 4
  MoeLayerConfig big = ToyMoeConfig();
  big.num_devices = big.num_experts = big.num_groups = 16;
  CHECK(BuildMoeLayerPair(small)->InstructionCount() == BuildMoeLayerPair(big)->InstructionCount());
  CHECK(BuildMoeLayer(small)->InstructionCount() == BuildMoeLayer(big)->InstructionCount());
  CHECK(BuildMoeLayerPair(PaperMoeConfig(128))->InstructionCount() ==
        BuildMoeLayerPair(PaperMoeConfig(2048))->InstructionCount());
  CHECK(BuildMoeLayerPair(PaperMoeConfig(2048))->InstructionCount() ==
        BuildMoeLayerPair(small)->InstructionCount());
}

TEST_CASE("annotations: the paper's three, plus experts, plus replicated Transformer params") {
  const MoeLayerConfig c = ToyMoeConfig();
  const int64_t d = c.num_devices;
  SUBCASE("layer pair, all annotations") {
    std::unique_ptr<ir::Module> mod = BuildMoeLayerPair(c);
    std::map<std::string, Sharding> expected = {
        {"x", SplitSharding(3, 0, d)},
        {"attention_residual.1", SplitSharding(3, 0, d)},  // the MoE layer's inputs
        {"wg", Sharding::Replicated()},
        {"dispatched_expert_inputs", SplitSharding(4, 0, d)},
        {"wi", SplitSharding(3, 0, d)},
        {"wo", SplitSharding(3, 0, d)},
        {"expert_outputs", SplitSharding(4, 0, d)},
    };
    for (const char* name :
         {"attention_wq", "attention_wk", "attention_wv", "attention_wo", "attention_wq.1",
          "attention_wk.1", "attention_wv.1", "attention_wo.1", "ffn_wi", "ffn_wo"}) {
      expected[name] = Sharding::Replicated();
    }
    std::map<std::string, Sharding> actual;
    for (const auto& i : mod->entry()->instructions()) {
      if (i->sharding) actual[i->name] = *i->sharding;
    }
    CHECK(actual == expected);
  }
  SUBCASE("Algorithm 2 alone with the paper's three annotations") {
    MoeLayerConfig three = c;
    three.annotate_experts = false;
    std::unique_ptr<ir::Module> mod = BuildMoeLayer(three);
    std::map<std::string, Sharding> actual;
    for (const auto& i : mod->entry()->instructions()) {
      if (i->sharding) actual[i->name] = *i->sharding;
    }
    CHECK(actual ==
          std::map<std::string, Sharding>{{"inputs", SplitSharding(3, 0, d)},
                                          {"wg", Sharding::Replicated()},
                                          {"dispatched_expert_inputs", SplitSharding(4, 0, d)}});
  }
  SUBCASE("annotate = false leaves no sharding") {
    MoeLayerConfig none = c;
    none.annotate = false;
    for (const auto& mod : {BuildMoeLayerPair(none), BuildMoeLayer(none)}) {
      for (const auto& i : mod->entry()->instructions()) CHECK_FALSE(i->sharding.has_value());
    }
  }
}

TEST_CASE("bf16: parameters and activations in bf16, the gating in f32") {
  MoeLayerConfig c = ToyMoeConfig();
  c.dtype = DType::kBF16;
  std::unique_ptr<ir::Module> mod = BuildMoeLayerPair(c);
  CHECK(Find(*mod, "x")->shape.dtype == DType::kBF16);
  CHECK(Find(*mod, "gates")->shape.dtype == DType::kF32);
  CHECK(Find(*mod, "combine_weights")->shape.dtype == DType::kBF16);
  CHECK(Find(*mod, "dispatch_mask")->shape.dtype == DType::kBF16);
  CHECK(mod->entry()->root()->shape.dtype == DType::kBF16);
  ir::Interpret(*mod, ir::RandomArguments(*mod, 1));  // runs
}

template <typename F>
void ExpectError(F f, const std::string& needle) {
  try {
    f();
    FAIL("expected an error containing: " << needle);
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

TEST_CASE("bad configs are errors naming the field") {
  auto with = [](auto change) {
    MoeLayerConfig c = ToyMoeConfig();
    change(c);
    return c;
  };
  ExpectError([&] { BuildMoeLayerPair(with([](auto& c) { c.num_experts = 1; })); },
              "moe.num_experts: must be >= 2, got 1");
  ExpectError([&] { BuildMoeLayerPair(with([](auto& c) { c.seq_len = 3; })); },
              "moe.seq_len: must divide tokens_per_group (8), got 3");
  ExpectError([&] { BuildMoeLayer(with([](auto& c) { c.num_devices = 8; })); },
              "moe.num_devices: 8 devices cannot split num_groups = 4");
  ExpectError([&] { BuildMoeLayer(with([](auto& c) { c.d_model = 0; })); },
              "moe.d_model: must be >= 1, got 0");
  ExpectError([&] { BuildMoeLayer(with([](auto& c) { c.dtype = DType::kS32; })); },
              "moe.dtype: must be f32 or bf16, got s32");
  // Algorithm 2 alone ignores the attention fields; more devices than groups is fine unannotated.
  BuildMoeLayer(with([](auto& c) { c.seq_len = 3; }));
  BuildMoeLayer(with([](auto& c) {
    c.num_devices = 8;
    c.annotate = false;
  }));
  CHECK(DefaultCapacity(8, 3) == 6);     // 16/3 rounded up
  CHECK(DefaultCapacity(1, 2048) == 1);  // never 0
  // 2S overflows int64: an error, not a negative capacity.
  CHECK_THROWS_WITH_AS(DefaultCapacity(int64_t{1} << 62, 4),
                       doctest::Contains("moe.capacity: the default 2 x tokens_per_group / "
                                         "num_experts overflows int64"),
                       Error);
  // Sizes whose tensors overflow int64 elements (G*S*M = 2 * 2^40 * 2^30 > 2^63): an error
  // naming the instruction, not a shape that wraps.
  ExpectError([&] {
    BuildMoeLayer(with([](auto& c) {
      c.tokens_per_group = int64_t{1} << 40;
      c.d_model = int64_t{1} << 30;
    }));
  }, "element count overflows int64");
}

// Matrix-unit FLOPs per Figure 8 category, per core (global / D), at the paper's size for 128
// experts: the numbers behind the assumptions in models/moe_transformer.h. S = 2048, M = 1024,
// H = 8192, N*K = 2048, L = 512, E = D = 128, C = 32; per core one group (G/D = 1) and one expert.
//   projections      8 x 2*S*M*NK                        = 68.7 GFLOP (1117 us at 61.5 TFLOP/s)
//   attention        2 layers x 2 x 2*S*L*NK             = 17.2 GFLOP ( 279 us)
//   transformer_ffn  2 x 2*S*M*H                         = 68.7 GFLOP
//   moe_ffn          2 x 2*(G*C)*M*H, G*C = 4096 tokens  = 137.4 GFLOP
//   gate_einsums     2*S*M*E (logits) + 2 x 2*S*E*C*M (dispatch, combine)
//   gate_cumsum      2 x 2*S*E*C (the GSE,GSC->GSEC outer products, no contraction)
TEST_CASE("paper size, 128 experts: matrix FLOPs per category match the hand derivation") {
  const int64_t d = 128;
  std::unique_ptr<ir::Module> mod = BuildMoeLayerPair(PaperMoeConfig(d));
  const ir::ModuleCost cost = ir::AnalyzeCost(*mod);
  std::map<std::string, double> per_core;
  for (const auto& i : mod->entry()->instructions()) {
    const ir::Cost& c = cost.per_instruction.at(i.get());
    if (c.unit == ir::Unit::kMatrix) per_core[i->scope] += c.flops / d;
  }
  const double s = 2048, m = 1024, h = 8192, nk = 2048, l = 512, e = 128, cap = 32;
  CHECK(per_core["projections"] == doctest::Approx(8 * 2 * s * m * nk));
  CHECK(per_core["attention"] == doctest::Approx(2 * 2 * 2 * s * l * nk));
  CHECK(per_core["transformer_ffn"] == doctest::Approx(2 * 2 * s * m * h));
  CHECK(per_core["moe_ffn"] == doctest::Approx(2 * 2 * (d * cap) * m * h));
  CHECK(per_core["gate_einsums"] == doctest::Approx(2 * s * m * e + 2 * 2 * s * e * cap * m));
  CHECK(per_core["gate_cumsum"] == doctest::Approx(2 * 2 * s * e * cap));
  CHECK(per_core.count("dispatch_combine") == 0);
}

// experiments/moe_layer.hlo (Algorithm 2, toy size, the paper's three annotations for D = 4) and
// experiments/moe_layer_toy.hlo (the same without annotations) are this builder's output. Run
// with PODSIM_UPDATE_GOLDEN=1 to rewrite them after changing the builder.
std::string GoldenHeader(bool annotated) {
  std::string h =
      "// GShard Algorithm 2: the MoE layer (top-2 gating of Algorithm 1, dispatch, experts,\n"
      "// combine) at toy size: G=4 groups, S=8 tokens, M=16, H=32, E=4 experts, C=4.\n"
      "// Generated by models::BuildMoeLayer (tests/models/moe_transformer_test.cc,\n"
      "// PODSIM_UPDATE_GOLDEN=1); scopes are GShard Figure 8's categories.\n";
  if (annotated) {
    h += "// The paper's three annotations for D=4: inputs split on G, wg replicated, dispatched\n"
         "// expert inputs split on E. Try: podsim partition experiments/moe_layer.hlo --mesh 4\n";
  } else {
    h += "// No annotations: podsim ir verify|print|cost|eval experiments/moe_layer_toy.hlo\n";
  }
  return h + "\n";
}

TEST_CASE("experiments/moe_layer.hlo and moe_layer_toy.hlo are the builder's output") {
  for (bool annotated : {true, false}) {
    CAPTURE(annotated);
    MoeLayerConfig c = ToyMoeConfig();
    c.annotate = annotated;
    c.annotate_experts = false;
    const std::string text = ir::PrintModule(*BuildMoeLayer(c));
    const std::string path = std::string(PODSIM_SOURCE_DIR) + "/experiments/" +
                             (annotated ? "moe_layer.hlo" : "moe_layer_toy.hlo");
    const char* update = std::getenv("PODSIM_UPDATE_GOLDEN");
    if (update != nullptr && std::string(update) == "1") {
      std::ofstream(path) << GoldenHeader(annotated) << text;
    }
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "missing " << path);
    std::stringstream file;
    file << in.rdbuf();
    std::unique_ptr<ir::Module> parsed = ir::ParseModule(file.str(), path);
    CHECK(ir::PrintModule(*parsed) == text);
  }
}

// What `podsim ir verify|print|cost|eval|convert experiments/moe_layer_toy.hlo` does, through
// the library calls: the parsed demo evaluates like the builder's module, has a cost, and
// survives the protobuf form.
TEST_CASE("experiments/moe_layer_toy.hlo: evaluates, costs, converts") {
  const std::string path = std::string(PODSIM_SOURCE_DIR) + "/experiments/moe_layer_toy.hlo";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing " << path);
  std::stringstream file;
  file << in.rdbuf();
  std::unique_ptr<ir::Module> parsed = ir::ParseModule(file.str(), path);
  MoeLayerConfig c = ToyMoeConfig();
  c.annotate = false;
  std::unique_ptr<ir::Module> built = BuildMoeLayer(c);
  const std::vector<ir::Literal> args = ir::RandomArguments(*built, 3);
  CHECK(ir::Interpret(*parsed, args) == ir::Interpret(*built, args));
  CHECK(ir::AnalyzeCost(*parsed).total.flops > 0);
  std::unique_ptr<ir::Module> back = ir::ModuleFromProtoBytes(ir::ModuleToProtoBytes(*parsed));
  CHECK(ir::PrintModule(*back) == ir::PrintModule(*parsed));
}

// The annotated modules through the partitioner: propagation from the annotations, SPMD
// lowering for D = 4, exactly the dispatch and combine AllToAlls (the attention and FFN are data
// parallel over G), and the same numbers as the unpartitioned module.
TEST_CASE("partitioned for D = 4: two AllToAlls, nothing else, numerically equal") {
  MoeLayerConfig three = ToyMoeConfig();
  three.annotate_experts = false;
  const MoeLayerConfig all = ToyMoeConfig();
  const std::vector<std::unique_ptr<ir::Module>> modules = [&] {
    std::vector<std::unique_ptr<ir::Module>> v;
    v.push_back(BuildMoeLayer(three));
    v.push_back(BuildMoeLayer(all));
    v.push_back(BuildMoeLayerPair(all));
    return v;
  }();
  for (const auto& mod : modules) {
    CAPTURE(mod->name());
    partitioner::PropagateShardings(*mod, 4);
    partitioner::PartitionOptions options;
    options.num_partitions = 4;
    partitioner::PartitionResult r = partitioner::PartitionSpmd(*mod, options);
    INFO(partitioner::ExplainProvenance(r));
    CHECK(CollectiveCounts(*r.module) == std::map<std::string, int64_t>{{"all-to-all", 2}});
    // With all annotations both come from the G <-> E transposes, so their time is Figure 8's
    // dispatch_combine. With the paper's three alone, propagation leaves the expert outputs on
    // E and the combine einsum itself pulls them back to G.
    REQUIRE(r.provenance.size() == 2);
    CHECK(r.provenance[0].user == "dispatched_expert_inputs");
    // Each inserted AllToAll carries the name scope of the instruction that needed it (in
    // emission order, which is the provenance order).
    std::vector<std::string> a2a_scopes;
    for (const auto& i : r.module->entry()->instructions()) {
      if (i->opcode == ir::Opcode::kAllToAll) a2a_scopes.push_back(i->scope);
    }
    REQUIRE(a2a_scopes.size() == 2);
    CHECK(a2a_scopes[0] == Find(*mod, r.provenance[0].user)->scope);
    CHECK(a2a_scopes[1] == Find(*mod, r.provenance[1].user)->scope);
    CHECK(!a2a_scopes[0].empty());
    if (mod.get() == modules[0].get()) {
      CHECK(r.provenance[1].user == "moe_outputs");
    } else {
      CHECK(r.provenance[1].user == "expert_outputs");
      for (const partitioner::CollectiveProvenance& p : r.provenance) {
        CHECK(Find(*mod, p.user)->scope == kScopeDispatchCombine);
      }
    }
    partitioner::EquivalenceReport report =
        partitioner::CompareSpmd(*mod, r, ir::RandomArguments(*mod, 5));
    CHECK_MESSAGE(report.ok(), report.ToString());
  }
}

// The dense FFN sublayer alone on one token x = [1, 2, 3, 4] (M = H = 4), with identity wi and
// wo and LayerNorm scale 1, bias 0. By hand: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4
// = 1.25, LN(x) = (x - 2.5) / sqrt(1.25 + 1e-6) = [-1.34164, -0.44721, 0.44721, 1.34164], so
// x + relu(LN(x)) = [1, 2, 3.44721, 5.34164]; without LayerNorm it would be x + relu(x) = 2x.
// With dropout 0.5 on the hidden activations and on the output, each positive output is either
// dropped by one of them (x) or kept and doubled by both (x + 4 relu), never x + 2 relu.
std::vector<double> DenseFfnSublayer(bool layer_norm, double dropout) {
  MoeLayerConfig c = ToyMoeConfig();
  c.d_model = c.d_ff = 4;
  c.annotate = false;
  c.layer_norm = layer_norm;
  c.dropout = dropout;
  c.seed = 2;  // a stream that keeps an output through both dropouts
  ir::Module m("ffn_sublayer");
  ir::Builder b(m.AddComputation("main", /*is_entry=*/true));
  int64_t next_parameter = 0;
  ir::Instruction* x = b.Parameter(next_parameter++, F32({1, 1, 4}), "x");
  b.computation()->set_root(AddDenseFfn(b, x, &next_parameter, c));
  ir::Verify(m);
  std::vector<ir::Literal> args = {ir::Literal(F32({1, 1, 4}), {1, 2, 3, 4})};
  if (layer_norm) {
    args.emplace_back(F32({4}), std::vector<double>{1, 1, 1, 1});  // ln_scale
    args.emplace_back(F32({4}), std::vector<double>{0, 0, 0, 0});  // ln_bias
  }
  std::vector<double> identity(16, 0.0);
  for (int i = 0; i < 4; ++i) identity[static_cast<size_t>(5 * i)] = 1;
  args.emplace_back(F32({4, 4}), identity);  // ffn_wi
  args.emplace_back(F32({4, 4}), identity);  // ffn_wo
  REQUIRE(static_cast<int64_t>(args.size()) == next_parameter);
  return ir::Interpret(m, args).values;
}

TEST_CASE("layer_norm: a sublayer is x + Dropout(Sublayer(LN(x))), derived by hand") {
  const std::vector<double> plain = DenseFfnSublayer(false, 0);
  CHECK(plain == std::vector<double>{2, 4, 6, 8});
  const std::vector<double> normed = DenseFfnSublayer(true, 0);
  REQUIRE(normed.size() == 4);
  CHECK(normed[0] == doctest::Approx(1));
  CHECK(normed[1] == doctest::Approx(2));
  CHECK(normed[2] == doctest::Approx(3.447214).epsilon(1e-5));
  CHECK(normed[3] == doctest::Approx(5.341641).epsilon(1e-5));
  const std::vector<double> dropped = DenseFfnSublayer(true, 0.5);
  CHECK(dropped[0] == doctest::Approx(1));
  CHECK(dropped[1] == doctest::Approx(2));
  const double relu2 = 0.447214, relu3 = 1.341641;
  CHECK((dropped[2] == doctest::Approx(3).epsilon(1e-5) ||
         dropped[2] == doctest::Approx(3 + 4 * relu2).epsilon(1e-5)));
  CHECK((dropped[3] == doctest::Approx(4).epsilon(1e-5) ||
         dropped[3] == doctest::Approx(4 + 4 * relu3).epsilon(1e-5)));
  // Seed 2 keeps at least one of them through both dropouts, so the x4 is exercised.
  CHECK((dropped[2] > 3.5 || dropped[3] > 4.5));
}

TEST_CASE("layer_norm: four LayerNorms, no new collective, partitioned equal with dropout") {
  MoeLayerConfig c = ToyMoeConfig();
  const size_t plain_params = BuildMoeLayerPair(c)->entry()->parameters().size();
  c.layer_norm = true;
  c.dropout = 0.25;
  std::unique_ptr<ir::Module> mod = BuildMoeLayerPair(c);
  // Before both attentions, the dense FFN and the MoE FFN: 4 LayerNorms of 2 parameters each.
  CHECK(mod->entry()->parameters().size() == plain_params + 8);
  // One random-uniform for the gating, one per residual dropout (two attentions, the FFN, the
  // MoE FFN) and one for the dense FFN's hidden activations.
  int64_t randoms = 0;
  for (const auto& i : mod->entry()->instructions()) {
    randoms += i->opcode == Opcode::kRandomUniform ? 1 : 0;
  }
  CHECK(randoms == 6);
  partitioner::PropagateShardings(*mod, 4);
  partitioner::PartitionOptions options;
  options.num_partitions = 4;
  partitioner::PartitionResult r = partitioner::PartitionSpmd(*mod, options);
  CHECK(CollectiveCounts(*r.module) == std::map<std::string, int64_t>{{"all-to-all", 2}});
  partitioner::EquivalenceReport report =
      partitioner::CompareSpmd(*mod, r, ir::RandomArguments(*mod, 7));
  CHECK_MESSAGE(report.ok(), report.ToString());
}

TEST_CASE("layer_norm and dropout from JSON; a bad rate is an error naming it") {
  const MoeLayerConfig c = MoeLayerConfig::FromJson(
      nlohmann::json{{"layer_norm", true}, {"dropout", 0.1}}, "model", ToyMoeConfig());
  CHECK(c.layer_norm);
  CHECK(c.dropout == 0.1);
  CHECK(c.ToJson()["layer_norm"] == true);
  CHECK_THROWS_WITH_AS(
      MoeLayerConfig::FromJson(nlohmann::json{{"dropout", 1.0}}, "model", ToyMoeConfig()),
      doctest::Contains("model.dropout"), ConfigError);
  MoeLayerConfig bad = ToyMoeConfig();
  bad.dropout = -0.5;
  CHECK_THROWS_WITH_AS(BuildMoeLayerPair(bad), doctest::Contains("moe.dropout"), Error);
}

}  // namespace
}  // namespace podsim::models
