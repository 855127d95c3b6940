// JsonReader (typed, path-naming getters) and command-line overrides.

#include "base/config.h"

#include <doctest/doctest.h>

#include "tests/topologies/test_util.h"

namespace podsim::topo {
namespace {

using testing::ErrorOf;

TEST_CASE("typed getters, fallbacks and limits") {
  const nlohmann::json j = {{"n", 8},     {"real", 8.0},    {"x", 2.5},         {"flag", true},
                            {"s", "abc"}, {"list", {1, 2}}, {"sub", {{"k", 1}}}};
  JsonReader r(j, "cfg");
  CHECK(r.Int("n") == 8);
  CHECK(r.Int("real") == 8);  // an integral number is an integer
  CHECK(r.Double("n") == 8.0);
  CHECK(r.Double("x", Limit::Positive()) == 2.5);
  CHECK(r.Bool("flag"));
  CHECK(r.String("s") == "abc");
  CHECK(r.IntArray("list") == std::vector<int64_t>{1, 2});
  CHECK(r.Int("absent", 7) == 7);
  CHECK(r.String("absent2", "dflt") == "dflt");
  JsonReader sub = r.Object("sub");
  CHECK(sub.path() == "cfg.sub");
  CHECK(sub.Int("k") == 1);
  CHECK_NOTHROW(sub.Finish());
  CHECK_NOTHROW(r.Finish());

  JsonReader e(j, "cfg");
  CHECK(ErrorOf([&] { e.Int("x"); }) == "cfg.x: must be an integer, got 2.5");
  CHECK(ErrorOf([&] { e.Int("n", Limit::AtLeast(9)); }) == "cfg.n: must be >= 9, got 8");
  CHECK(ErrorOf([&] { e.Double("x", Limit::Between(0, 1)); }) ==
        "cfg.x: must be in [0, 1], got 2.5");
  CHECK(ErrorOf([&] { e.Bool("n"); }) == "cfg.n: must be true or false, got an integer 8");
  CHECK(ErrorOf([&] { e.String("n"); }) == "cfg.n: must be a string, got an integer 8");
  CHECK(ErrorOf([&] { e.Int("missing"); }) == "cfg.missing: required key is missing");
  CHECK(ErrorOf([&] { e.IntArray("s"); }) == "cfg.s: must be an array, got a string \"abc\"");
  CHECK(ErrorOf([&] {
          e.Choice("s", {"a", "b"});
        }) == "cfg.s: must be one of \"a\", \"b\"; got \"abc\"");
  CHECK(ErrorOf([&] { e.Object("n"); }) == "cfg.n: must be an object, got an integer 8");
  CHECK(ErrorOf([] { JsonReader bad(nlohmann::json::array(), "top"); }) ==
        "top: must be an object, got an array []");
  CHECK(ErrorOf([] { AsInt(nlohmann::json(1e30), "big"); }) ==
        "big: must be an integer, got 1e+30");
}

TEST_CASE("Finish rejects unknown keys, accepts '_' comments") {
  const nlohmann::json j = {{"a", 1}, {"_notes", "fine"}, {"b", 2}};
  JsonReader r(j, "cfg");
  r.Int("a");
  CHECK(ErrorOf([&] { r.Finish(); }) == "cfg.b: unknown key (known keys: a)");
  r.Int("b", 0);
  CHECK_NOTHROW(r.Finish());
  CHECK(CommentKeys(j) == nlohmann::json{{"_notes", "fine"}});
  // An empty base path gives bare keys.
  JsonReader top(j, "");
  CHECK(ErrorOf([&] { top.Finish(); }) == "a: unknown key (known keys: )");
}

TEST_CASE("ParseOverrideValue: JSON when it parses, else a string") {
  CHECK(ParseOverrideValue("2e11") == nlohmann::json(2e11));
  CHECK(ParseOverrideValue("8") == nlohmann::json(8));
  CHECK(ParseOverrideValue("true") == nlohmann::json(true));
  CHECK(ParseOverrideValue("[4,4]") == nlohmann::json({4, 4}));
  CHECK(ParseOverrideValue("split") == nlohmann::json("split"));
  CHECK(ParseOverrideValue("tpu-v3-128") == nlohmann::json("tpu-v3-128"));
  CHECK(ParseOverrideValue("\"8\"") == nlohmann::json("8"));
  CHECK(ParseOverrideValue("") == nlohmann::json(""));
}

TEST_CASE("ApplyOverride sets values at dotted paths with indices") {
  nlohmann::json c = {{"topology", {{"dims", {8, 8}}, {"link_bandwidth", 1e11}}}};
  ApplyOverride(c, "topology.link_bandwidth=2e11");
  CHECK(c["topology"]["link_bandwidth"] == 2e11);
  ApplyOverride(c, "topology.dims[1]=16");
  CHECK(c["topology"]["dims"] == nlohmann::json({8, 16}));
  ApplyOverride(c, "topology.tie_break=split");
  CHECK(c["topology"]["tie_break"] == "split");
  ApplyOverride(c, "sim.network.model=flow");  // missing objects are created
  CHECK(c["sim"]["network"]["model"] == "flow");
  ApplyOverride(c, "topology.name=a=b");  // the first '=' separates
  CHECK(c["topology"]["name"] == "a=b");
  nlohmann::json nested = {{"groups", {{{"x", 1}}, {{"x", 2}}}}};
  ApplyOverride(nested, "groups[1].x=5");
  CHECK(nested["groups"][1]["x"] == 5);
}

TEST_CASE("ApplyOverride errors say what is wrong with the path") {
  nlohmann::json c = {{"topology", {{"dims", {8, 8}}, {"link_bandwidth", 1e11}}}};
  CHECK(ErrorOf([&] { ApplyOverride(c, "topology.dims[5]=1"); }) ==
        "topology.dims: index 5 out of range (2 elements); cannot set topology.dims[5]");
  CHECK(
      ErrorOf([&] { ApplyOverride(c, "topology.link_bandwidth.x=1"); }) ==
      "topology.link_bandwidth: is a number, not an object; cannot set topology.link_bandwidth.x");
  CHECK(ErrorOf([&] { ApplyOverride(c, "topology[0]=1"); }) ==
        "topology: is an object, not an array; cannot set topology[0]");
  CHECK(ErrorOf([&] { ApplyOverride(c, "topology.link_bandwidth"); }) ==
        "override 'topology.link_bandwidth': expected PATH=VALUE");
  CHECK(ErrorOf([&] { ApplyOverride(c, "topology..x=1"); }) ==
        "override path 'topology..x': empty key at position 9");
  CHECK(ErrorOf([&] { ApplyOverride(c, "topology.dims[a]=1"); }) ==
        "override path 'topology.dims[a]': index 'a' is not a small non-negative integer");
  CHECK(ErrorOf([&] { ApplyOverride(c, "=1"); }) == "override path '': empty path");
  CHECK(ErrorOf([&] { ApplyOverride(c, "topology.=1"); }) ==
        "override path 'topology.': path ends with '.'");
  // The config is unchanged by a failed override.
  CHECK(c["topology"]["dims"] == nlohmann::json({8, 8}));
}

}  // namespace
}  // namespace podsim::topo
