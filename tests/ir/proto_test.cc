// The protobuf form: loss-free round trips over every opcode, and rejection of malformed input.
// Malformed messages are written with a tiny wire-format encoder (below) so that the tests see
// only the public API and the schema's field numbers (ir/ir.proto).

#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <set>
#include <string>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/proto.h"
#include "ir/verifier.h"
#include "tests/ir/all_ops_module.h"
#include "tests/ir/module_equal.h"

namespace podsim::ir {
namespace {

using testing::BuildAllOpsModule;
using testing::ModuleDifference;

template <typename F>
void ExpectError(F f, const std::string& needle) {
  try {
    f();
    FAIL("expected an error containing: " << needle);
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

// One protobuf message in wire format: fields appended in call order.
class Wire {
 public:
  Wire& Varint(int field, uint64_t v) {
    Tag(field, 0);
    Raw(v);
    return *this;
  }
  Wire& Int(int field, int64_t v) { return Varint(field, static_cast<uint64_t>(v)); }
  Wire& Double(int field, double v) {
    Tag(field, 1);
    uint64_t bits = std::bit_cast<uint64_t>(v);
    for (int k = 0; k < 8; ++k) bytes_ += static_cast<char>((bits >> (8 * k)) & 0xff);
    return *this;
  }
  Wire& Bytes(int field, const std::string& s) {
    Tag(field, 2);
    Raw(s.size());
    bytes_ += s;
    return *this;
  }
  Wire& Message(int field, const Wire& m) { return Bytes(field, m.bytes_); }
  const std::string& bytes() const { return bytes_; }

 private:
  void Tag(int field, int wire_type) { Raw(static_cast<uint64_t>(field) << 3 | wire_type); }
  void Raw(uint64_t v) {
    while (v >= 0x80) {
      bytes_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes_ += static_cast<char>(v);
  }
  std::string bytes_;
};

// Field numbers of ir.proto used below.
constexpr int kModuleName = 1, kModuleComputations = 2, kModuleEntry = 3;
constexpr int kCompName = 1, kCompInstructions = 2, kCompRoot = 3;
constexpr int kInstrName = 1, kInstrOpcode = 2, kInstrShape = 3, kInstrOperands = 4;
constexpr int kInstrReduceKind = 17, kInstrComparison = 18, kInstrBody = 31, kInstrSharding = 34;
constexpr int kShapeDtype = 1, kShapeDims = 2;
constexpr int kRefIndex = 1, kRefName = 2;
constexpr int kOpcodeParameter = 0, kOpcodeNegate = 5, kOpcodeLoop = 47;

Wire F32Shape(int64_t n) { return Wire().Int(kShapeDims, n); }
Wire RefByName(const std::string& name) { return Wire().Bytes(kRefName, name); }
Wire RefByIndex(int64_t k) { return Wire().Int(kRefIndex, k); }

Wire Param(const std::string& name) {
  return Wire().Bytes(kInstrName, name).Int(kInstrOpcode, kOpcodeParameter)
      .Message(kInstrShape, F32Shape(4));
}
Wire Negate(const std::string& name, const Wire& operand) {
  return Wire().Bytes(kInstrName, name).Int(kInstrOpcode, kOpcodeNegate)
      .Message(kInstrShape, F32Shape(4)).Message(kInstrOperands, operand);
}
// A module with one computation %main holding `instrs`, root unset (the last one).
std::string OneComputation(const std::vector<Wire>& instrs) {
  Wire comp;
  comp.Bytes(kCompName, "main");
  for (const Wire& i : instrs) comp.Message(kCompInstructions, i);
  return Wire().Bytes(kModuleName, "m").Message(kModuleComputations, comp)
      .Bytes(kModuleEntry, "main").bytes();
}

TEST_CASE("the all-ops module uses every opcode") {
  auto m = BuildAllOpsModule();
  std::set<Opcode> seen;
  for (const auto& c : m->computations()) {
    for (const auto& i : c->instructions()) seen.insert(i->opcode);
  }
  CHECK(static_cast<int>(seen.size()) == kNumOpcodes);
}

TEST_CASE("a round trip through proto bytes loses nothing") {
  auto m = BuildAllOpsModule();
  std::string bytes = ModuleToProtoBytes(*m);
  auto back = ModuleFromProtoBytes(bytes);
  CHECK(ModuleDifference(*m, *back) == "");
  // Writing the result again gives the same bytes.
  CHECK(ModuleToProtoBytes(*back) == bytes);
}

TEST_CASE("special floats survive bit for bit") {
  auto m = BuildAllOpsModule();
  auto back = ModuleFromProtoBytes(ModuleToProtoBytes(*m));
  const Instruction* c = nullptr;
  for (const auto& i : back->entry()->instructions()) {
    if (i->opcode == Opcode::kConstant && i->shape.rank() == 1) c = i.get();
  }
  REQUIRE(c != nullptr);
  REQUIRE(c->literal.values.size() == 8);
  CHECK(std::bit_cast<uint64_t>(c->literal.values[0]) == 0x8000000000000000ull);  // -0
  CHECK(std::bit_cast<uint64_t>(c->literal.values[3]) == 0xfff8000000000123ull);  // NaN payload
  CHECK(c->literal.values[4] == 1e-40);
}

TEST_CASE("non-default attribute values round trip, defaults stay defaults") {
  // feature_group_count, rng_high and window fields are proto3 `optional` with C++ defaults
  // != 0: check both a zero (written explicitly) and the default (not written).
  auto m = std::make_unique<Module>("defaults");
  Builder b(m->AddComputation("main", true));
  b.RandomUniform(Shape(DType::kF32, {2}), 0, -1.0, 0.0);  // rng_high = 0
  b.RandomUniform(Shape(DType::kF32, {2}), ~uint64_t{0});  // rng_high = 1 (default), max seed
  auto* x = b.Parameter(0, Shape(DType::kF32, {4}), "x");
  WindowDim w;
  w.size = 1;
  b.ReduceWindow(x, {w}, ReduceKind::kAdd);
  Instruction* odd = b.Neg(x);
  odd->feature_group_count = 0;  // not read by negate, still kept
  odd->rng_high = -0.0;
  odd->conv.input_feature = 0;
  odd->window = {WindowDim{0, 0, -1, -2, 0, 0}};
  Verify(*m);
  auto back = ModuleFromProtoBytes(ModuleToProtoBytes(*m));
  CHECK(ModuleDifference(*m, *back) == "");
}

TEST_CASE("names and scopes are arbitrary bytes") {
  auto m = std::make_unique<Module>(std::string("m\xff\0z", 4));
  Builder b(m->AddComputation("ma\xc3in", true));
  b.set_scope("\xfe/scope");
  b.Neg(b.Parameter(0, Shape(DType::kF32, {2}), "x\x80"));
  Verify(*m);
  auto back = ModuleFromProtoBytes(ModuleToProtoBytes(*m));
  CHECK(ModuleDifference(*m, *back) == "");
}

TEST_CASE("a module of loops nested two deep round trips") {
  auto m = std::make_unique<Module>("nested");
  const Shape v(DType::kF32, {4});
  const Shape it(DType::kS32, {});
  Computation* inner = m->AddComputation("inner");
  {
    Builder b(inner);
    b.Parameter(0, it, "i");
    auto* a = b.Parameter(1, v, "a");
    b.Tuple({b.Exp(a)});
  }
  Computation* outer = m->AddComputation("outer");
  {
    Builder b(outer);
    b.Parameter(0, it, "j");
    auto* a = b.Parameter(1, v, "b");
    b.Tuple({b.GetTupleElement(b.Loop({a}, inner, 2), 0)});
  }
  Builder b(m->AddComputation("main", true));
  b.GetTupleElement(b.Loop({b.Parameter(0, v, "x")}, outer, 5), 0);
  Verify(*m);
  auto back = ModuleFromProtoBytes(ModuleToProtoBytes(*m));
  CHECK(ModuleDifference(*m, *back) == "");
}

TEST_CASE("operands may be given by name or by index") {
  auto by_name = ModuleFromProtoBytes(OneComputation({Param("p"), Negate("n", RefByName("p"))}));
  auto by_index = ModuleFromProtoBytes(OneComputation({Param("p"), Negate("n", RefByIndex(0))}));
  CHECK(ModuleDifference(*by_name, *by_index) == "");
  CHECK(by_name->entry()->root()->operand(0)->name == "p");
}

TEST_CASE("malformed bytes are rejected") {
  ExpectError([] { ModuleFromProtoBytes("\xff\xff\xff\xff"); },
              "not a valid podsim.ir.ModuleProto");
  ExpectError([] { ModuleFromProtoBytes(""); }, "names no entry computation");
  // Every strict prefix of a valid message is rejected (cut fields, or missing parts).
  std::string bytes = ModuleToProtoBytes(*BuildAllOpsModule());
  int accepted = 0;
  for (size_t n = 0; n < bytes.size(); n += 7) {
    try {
      ModuleFromProtoBytes(std::string_view(bytes).substr(0, n));
      ++accepted;
    } catch (const Error&) {
    }
  }
  CHECK(accepted == 0);
}

TEST_CASE("corrupted bytes give an error or a verified module, nothing else") {
  std::string bytes = ModuleToProtoBytes(*BuildAllOpsModule());
  for (size_t k = 0; k < bytes.size(); k += 3) {
    std::string bad = bytes;
    bad[k] = static_cast<char>(bad[k] ^ (1 << (k % 8)));
    try {
      ModuleFromProtoBytes(bad);
    } catch (const Error&) {
    }
  }
}

TEST_CASE("unknown operand names and bad indices name the instruction") {
  ExpectError(
      [] { ModuleFromProtoBytes(OneComputation({Param("p"), Negate("n", RefByName("q"))})); },
              "computation %main, instruction %n: operand 0 names unknown instruction %q");
  // A forward reference by name is unknown at that point.
  ExpectError(
      [] {
        ModuleFromProtoBytes(
            OneComputation({Param("p"), Negate("n", RefByName("m")), Negate("m", RefByName("p"))}));
      },
      "instruction %n: operand 0 names unknown instruction %m");
  ExpectError(
      [] { ModuleFromProtoBytes(OneComputation({Param("p"), Negate("n", RefByIndex(1))})); },
              "instruction %n: operand 0 index 1 is not an earlier instruction");
  ExpectError(
      [] { ModuleFromProtoBytes(OneComputation({Param("p"), Negate("n", RefByIndex(-1))})); },
      "instruction %n: operand 0 index -1");
  ExpectError([] { ModuleFromProtoBytes(OneComputation({Param("p"), Negate("n", Wire())})); },
              "instruction %n: operand 0 names no instruction");
}

TEST_CASE("bad enum values name the instruction") {
  ExpectError(
      [] {
        ModuleFromProtoBytes(OneComputation(
            {Param("p"), Wire().Bytes(kInstrName, "n").Int(kInstrOpcode, 99)}));
      },
      "instruction %n: bad opcode value 99");
  ExpectError(
      [] {
        ModuleFromProtoBytes(OneComputation({Param("p"), Negate("n", RefByIndex(0))
                                                             .Message(kInstrShape, Wire().Int(
                                                                 kShapeDtype, 99))}));
      },
      "instruction %n: bad dtype value 99");
  ExpectError(
      [] {
        ModuleFromProtoBytes(
            OneComputation({Param("p"), Negate("n", RefByIndex(0)).Int(kInstrReduceKind, 5)}));
      },
      "instruction %n: bad reduce_kind value 5");
  ExpectError(
      [] {
        ModuleFromProtoBytes(
            OneComputation({Param("p"), Negate("n", RefByIndex(0)).Int(kInstrComparison, -1)}));
      },
      "instruction %n: bad comparison value -1");
  ExpectError(
      [] {
        ModuleFromProtoBytes(OneComputation(
            {Param("p"), Negate("n", RefByIndex(0)).Message(kInstrSharding, Wire().Int(1, 4))}));
      },
      "instruction %n: bad sharding kind value 4");
}

TEST_CASE("names, bodies, roots and the entry are checked") {
  ExpectError([] { ModuleFromProtoBytes(OneComputation({Param("p"), Param("p")})); },
              "instruction %p: name is used twice in the module");
  ExpectError([] { ModuleFromProtoBytes(OneComputation({Param("")})); },
              "computation %main, instruction #0: has no name");
  ExpectError(
      [] {
        ModuleFromProtoBytes(OneComputation(
            {Param("p"), Wire().Bytes(kInstrName, "l").Int(kInstrOpcode, kOpcodeLoop)
                             .Bytes(kInstrBody, "nowhere")}));
      },
      "instruction %l: loop body %nowhere is not a computation of the module");
  ExpectError(
      [] {
        Wire comp;
        comp.Bytes(kCompName, "main").Message(kCompInstructions, Param("p"))
            .Message(kCompRoot, RefByName("zz"));
        ModuleFromProtoBytes(Wire().Message(kModuleComputations, comp)
                                 .Bytes(kModuleEntry, "main").bytes());
      },
      "computation %main: root names unknown instruction %zz");
  ExpectError(
      [] {
        Wire comp;
        comp.Bytes(kCompName, "main").Message(kCompInstructions, Param("p"));
        ModuleFromProtoBytes(Wire().Message(kModuleComputations, comp)
                                 .Message(kModuleComputations, comp)
                                 .Bytes(kModuleEntry, "main").bytes());
      },
      "computation name %main is used twice");
  ExpectError(
      [] {
        Wire comp;
        comp.Bytes(kCompName, "main").Message(kCompInstructions, Param("p"));
        ModuleFromProtoBytes(Wire().Message(kModuleComputations, comp)
                                 .Bytes(kModuleEntry, "other").bytes());
      },
      "entry computation %other is not a computation of the module");
}

TEST_CASE("the result is verified") {
  // negate's stored shape f32[5] differs from its operand's f32[4].
  ExpectError(
      [] {
        ModuleFromProtoBytes(OneComputation(
            {Param("p"), Negate("n", RefByIndex(0)).Message(kInstrShape, F32Shape(5))}));
      },
      "instruction %n: shape f32[4,5] differs from the inferred f32[4]");
}

}  // namespace
}  // namespace podsim::ir
