// Shape rules of every op: expected shapes derived by hand from the semantics table in
// ir/instruction.h, and rejection of invalid operands/attributes with a message naming the
// instruction.

#include <doctest/doctest.h>

#include <string>

#include "base/error.h"
#include "ir/builder.h"
#include "ir/module.h"

namespace podsim::ir {
namespace {

Shape F32(std::vector<int64_t> dims) { return Shape(DType::kF32, std::move(dims)); }
Shape S32(std::vector<int64_t> dims) { return Shape(DType::kS32, std::move(dims)); }

struct Fixture {
  Module m{"t"};
  Computation* c = m.AddComputation("main", true);
  Builder b{c};
};

// Runs `build` and checks it throws an Error whose message contains `needle`.
template <typename F>
void ShapeInferenceExpectError(F build, const std::string& needle) {
  try {
    build();
    FAIL("expected an error containing: " << needle);
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

TEST_CASE("elementwise shapes") {
  Fixture f;
  auto* x = f.b.Parameter(0, F32({2, 3}));
  auto* y = f.b.Parameter(1, F32({2, 3}));
  CHECK(f.b.Add(x, y)->shape == F32({2, 3}));
  CHECK(f.b.Compare(x, y, Comparison::kLt)->shape == Shape(DType::kPred, {2, 3}));
  CHECK(f.b.Convert(x, DType::kBF16)->shape == Shape(DType::kBF16, {2, 3}));
  auto* p = f.b.Compare(x, y, Comparison::kEq);
  CHECK(f.b.Select(p, x, y)->shape == F32({2, 3}));
  auto* z = f.b.Parameter(2, F32({3, 2}));
  ShapeInferenceExpectError([&] { f.b.Add(x, z); }, "operand shapes differ");
  auto* i = f.b.Parameter(3, S32({2, 3}));
  ShapeInferenceExpectError([&] { f.b.Exp(i); }, "floating-point");
  ShapeInferenceExpectError([&] { f.b.Select(x, x, y); }, "predicate must be pred");
}

TEST_CASE("data movement shapes") {
  Fixture f;
  auto* x = f.b.Parameter(0, F32({4, 6}));
  // broadcast [4,6] into [2,4,6] with dims {1,2}.
  CHECK(f.b.Broadcast(x, {2, 4, 6}, {1, 2})->shape == F32({2, 4, 6}));
  ShapeInferenceExpectError(
      [&] {
        f.b.Broadcast(x, {2, 4, 7}, {1, 2});
      },
      "does not match output dim");
  CHECK(f.b.Reshape(x, {3, 8})->shape == F32({3, 8}));
  ShapeInferenceExpectError([&] { f.b.Reshape(x, {5, 5}); }, "cannot reshape");
  CHECK(f.b.Transpose(x, {1, 0})->shape == F32({6, 4}));
  ShapeInferenceExpectError([&] { f.b.Transpose(x, {0, 0}); }, "repeats");
  // slice [1:4:2] of 4 -> elements 1,3 -> 2; [0:6:4] of 6 -> 0,4 -> 2.
  CHECK(f.b.Slice(x, {1, 0}, {4, 6}, {2, 4})->shape == F32({2, 2}));
  ShapeInferenceExpectError([&] { f.b.Slice(x, {0, 0}, {5, 6}); }, "bad slice");
  auto* i0 = f.b.ConstantScalar(DType::kS32, 1);
  CHECK(f.b.DynamicSlice(x, {i0, i0}, {2, 3})->shape == F32({2, 3}));
  ShapeInferenceExpectError([&] { f.b.DynamicSlice(x, {i0}, {2, 3}); }, "expects 3 operand(s)");
  auto* u = f.b.Parameter(1, F32({2, 2}));
  CHECK(f.b.DynamicUpdateSlice(x, u, {i0, i0})->shape == F32({4, 6}));
  // pad dim0: 4 + 1 + 2 + 3*1 = 10; dim1: 6 - 1 + 0 + 0 = 5.
  auto* zero = f.b.ConstantScalar(DType::kF32, 0);
  CHECK(f.b.Pad(x, zero, {{1, 2, 1}, {-1, 0, 0}})->shape == F32({10, 5}));
  CHECK(f.b.Concatenate({x, x, x}, 1)->shape == F32({4, 18}));
  CHECK(f.b.Reverse(x, {0, 1})->shape == F32({4, 6}));
  // gather axis 1 with indices [2,5]: [4] ++ [2,5] ++ [] = [4,2,5].
  auto* idx = f.b.Parameter(2, S32({2, 5}));
  CHECK(f.b.Gather(x, idx, 1)->shape == F32({4, 2, 5}));
  ShapeInferenceExpectError([&] { f.b.Gather(x, x, 0); }, "indices must be integers");
}

TEST_CASE("dot, einsum and convolution shapes") {
  Fixture f;
  auto* a = f.b.Parameter(0, F32({3, 4, 5}));  // batch 3, M 4, K 5
  auto* w = f.b.Parameter(1, F32({3, 5, 7}));  // batch 3, K 5, N 7
  DotDims dd{{0}, {0}, {2}, {1}};
  CHECK(f.b.Dot(a, w, dd)->shape == F32({3, 4, 7}));
  DotDims bad{{0}, {0}, {2}, {2}};
  ShapeInferenceExpectError([&] { f.b.Dot(a, w, bad); }, "contracting dim sizes differ");
  // GShard dispatch einsum GSEC,GSM->EGCM with G=2 S=4 E=3 C=2 M=5.
  auto* mask = f.b.Parameter(2, F32({2, 4, 3, 2}));
  auto* x = f.b.Parameter(3, F32({2, 4, 5}));
  auto* e = f.b.Einsum("GSEC,GSM->EGCM", mask, x);
  CHECK(e->shape == F32({3, 2, 2, 5}));
  CHECK(e->opcode == Opcode::kTranspose);  // dot yields [G,E,C,M]; output order differs
  auto* wg = f.b.Parameter(4, F32({5, 3}));
  auto* logits = f.b.Einsum("GSM,ME->GSE", x, wg);
  CHECK(logits->shape == F32({2, 4, 3}));
  CHECK(logits->opcode == Opcode::kDot);  // [G,S] free then [E]: already in order
  ShapeInferenceExpectError([&] { f.b.Einsum("GSM,ME->GSX", x, wg); }, "in neither operand");
  ShapeInferenceExpectError([&] { f.b.Einsum("GS,ME->GSE", x, wg); }, "has rank 3");
  // conv NHWC x HWIO: 1x8x8x4 input, 3x3x4x6 kernel, stride 2, pad 1 each side:
  // out = (8 + 2 - 3) / 2 + 1 = 4.
  auto* img = f.b.Parameter(5, F32({1, 8, 8, 4}));
  auto* k = f.b.Parameter(6, F32({3, 3, 4, 6}));
  ConvDims cd{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
  WindowDim wd{3, 2, 1, 1, 1, 1};
  CHECK(f.b.Convolution(img, k, cd, {wd, wd})->shape == F32({1, 4, 4, 6}));
  // lhs dilation 2 on 8 -> 15; window dilation 2 on 3 -> 5; pad 0: (15 - 5) / 1 + 1 = 11.
  WindowDim dil{3, 1, 0, 0, 2, 2};
  CHECK(f.b.Convolution(img, k, cd, {dil, dil})->shape == F32({1, 11, 11, 6}));
  // feature groups 2: kernel input features 2 * 2 = 4 input features.
  auto* kg = f.b.Parameter(7, F32({3, 3, 2, 6}));
  CHECK(f.b.Convolution(img, kg, cd, {wd, wd}, 2)->shape == F32({1, 4, 4, 6}));
  ShapeInferenceExpectError([&] { f.b.Convolution(img, kg, cd, {wd, wd}, 1); }, "times groups");
}

TEST_CASE("reductions, windows, sort and top-k shapes") {
  Fixture f;
  auto* x = f.b.Parameter(0, F32({4, 6, 8}));
  CHECK(f.b.Reduce(x, {0, 2}, ReduceKind::kAdd)->shape == F32({6}));
  CHECK(f.b.Argmax(x, 1)->shape == S32({4, 8}));
  // 2x2 max pool stride 2 on dims 1,2: 6 -> 3, 8 -> 4.
  std::vector<WindowDim> win = {{1, 1}, {2, 2}, {2, 2}};
  CHECK(f.b.ReduceWindow(x, win, ReduceKind::kMax)->shape == F32({4, 3, 4}));
  CHECK(f.b.Cumsum(x, 2, true)->shape == F32({4, 6, 8}));
  CHECK(f.b.Sort(x, 0, true)->shape == F32({4, 6, 8}));
  auto* t = f.b.TopK(x, 2);
  CHECK(t->shape == Shape::Tuple({F32({4, 6, 2}), S32({4, 6, 2})}));
  CHECK(f.b.GetTupleElement(t, 1)->shape == S32({4, 6, 2}));
  ShapeInferenceExpectError([&] { f.b.TopK(x, 9); }, "k=9");
  ShapeInferenceExpectError([&] { f.b.Reduce(x, {3}, ReduceKind::kAdd); }, "out of range");
  ShapeInferenceExpectError([&] { f.b.Reduce(x, {0}, ReduceKind::kAnd); }, "need pred");
}

TEST_CASE("collective shapes") {
  Fixture f;
  auto* x = f.b.Parameter(0, F32({4, 6}));
  Builder::Groups pairs = {{0, 1}, {2, 3}};
  CHECK(f.b.AllReduce(x, ReduceKind::kAdd, pairs)->shape == F32({4, 6}));
  CHECK(f.b.AllGather(x, 1, pairs)->shape == F32({4, 12}));
  CHECK(f.b.AllGather(x, 0, {}, 8)->shape == F32({32, 6}));
  CHECK(f.b.ReduceScatter(x, 0, ReduceKind::kAdd, pairs)->shape == F32({2, 6}));
  CHECK(f.b.ReduceScatter(x, 1, ReduceKind::kAdd, {}, 3)->shape == F32({4, 2}));
  // all-to-all over 2: split dim 0 (4 -> 2), concat dim 1 (6 -> 12).
  CHECK(f.b.AllToAll(x, 0, 1, pairs)->shape == F32({2, 12}));
  CHECK(f.b.CollectivePermute(x, {{0, 1}, {1, 0}})->shape == F32({4, 6}));
  ShapeInferenceExpectError(
      [&] {
        f.b.ReduceScatter(x, 1, ReduceKind::kAdd, {{0, 1, 2, 3}});
      },
      "does not divide into 4");
  ShapeInferenceExpectError(
      [&] {
        f.b.AllReduce(x, ReduceKind::kAdd, {{0, 1}, {1, 2}});
      },
      "appears twice");
  ShapeInferenceExpectError(
      [&] {
        f.b.AllReduce(x, ReduceKind::kAdd, {{0, 1}, {2}});
      },
      "same size");
  ShapeInferenceExpectError(
      [&] {
        f.b.CollectivePermute(x, {{0, 1}, {2, 1}});
      },
      "target 1 appears twice");
}

TEST_CASE("loop, tuple and leaves") {
  Module m("t");
  Computation* body = m.AddComputation("body");
  Builder bb(body);
  auto* it = bb.Parameter(0, S32({}));
  auto* acc = bb.Parameter(1, S32({}));
  bb.Tuple({bb.Add(acc, it)});
  Computation* main = m.AddComputation("main", true);
  Builder b(main);
  auto* zero = b.ConstantScalar(DType::kS32, 0);
  auto* loop = b.Loop({zero}, body, 5);
  CHECK(loop->shape == Shape::Tuple({S32({})}));
  CHECK(b.PartitionId()->shape == S32({}));
  CHECK(b.Iota(S32({3, 4}), 1)->shape == S32({3, 4}));
  auto* f32 = b.Parameter(0, F32({2}));
  ShapeInferenceExpectError([&] { b.Loop({f32}, body, 5); }, "does not match operand 0");
  ShapeInferenceExpectError([&] { b.Iota(S32({3}), 1); }, "out of range");
  ShapeInferenceExpectError([&] { b.RandomUniform(F32({4}), 1, 1.0, 0.0); }, "low must be < high");
}

TEST_CASE("errors name the instruction") {
  Fixture f;
  auto* x = f.b.Parameter(0, F32({2}), "x");
  auto* y = f.b.Parameter(1, F32({3}), "y");
  ShapeInferenceExpectError([&] { f.b.Add(x, y); },
                            "%add (add): operand shapes differ: f32[2] vs f32[3]");
}

}  // namespace
}  // namespace podsim::ir
