#include "ir/sharding.h"

#include <cctype>

#include "ir/error.h"

namespace podsim::ir {

Sharding Sharding::Maximal(int64_t device) {
  Sharding s;
  s.kind = Kind::kMaximal;
  s.device = device;
  return s;
}

Sharding Sharding::Tiled(std::vector<int64_t> tile_dims, std::vector<int64_t> devices,
                         bool last_tile_dim_replicate) {
  Sharding s;
  s.kind = Kind::kTiled;
  s.tile_dims = std::move(tile_dims);
  s.devices = std::move(devices);
  s.last_tile_dim_replicate = last_tile_dim_replicate;
  return s;
}

std::string Sharding::ToString() const {
  switch (kind) {
    case Kind::kReplicated: return "{replicated}";
    case Kind::kManual: return "{manual}";
    case Kind::kMaximal: return "{maximal device=" + std::to_string(device) + "}";
    case Kind::kTiled: break;
  }
  std::string out = "{devices=[";
  for (size_t i = 0; i < tile_dims.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(tile_dims[i]);
  }
  out += "]";
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(devices[i]);
  }
  if (last_tile_dim_replicate) out += " last_tile_dim_replicate";
  return out + "}";
}

namespace {

class ShardingParser {
 public:
  explicit ShardingParser(std::string_view t) : text_(t) {}

  Sharding Parse() {
    Expect("{");
    Sharding s;
    if (Consume("replicated")) {
    } else if (Consume("manual")) {
      s.kind = Sharding::Kind::kManual;
    } else if (Consume("maximal")) {
      SkipSpaces();
      Expect("device=");
      s = Sharding::Maximal(Int());
    } else if (Consume("devices=[")) {
      s.kind = Sharding::Kind::kTiled;
      s.tile_dims.push_back(Int());
      while (Consume(",")) s.tile_dims.push_back(Int());
      Expect("]");
      s.devices.push_back(Int());
      while (Consume(",")) s.devices.push_back(Int());
      SkipSpaces();
      if (Consume("last_tile_dim_replicate")) s.last_tile_dim_replicate = true;
    } else {
      Fail("expected replicated, maximal, manual or devices=[...]");
    }
    SkipSpaces();
    Expect("}");
    if (pos_ != text_.size()) Fail("unexpected text after sharding");
    return s;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) {
    throw Error("sharding '" + std::string(text_) + "' at offset " + std::to_string(pos_) + ": " +
                what);
  }
  void SkipSpaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(std::string_view tok) {
    if (text_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  void Expect(std::string_view tok) {
    if (!Consume(tok)) Fail("expected '" + std::string(tok) + "'");
  }
  int64_t Int() {
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) Fail("expected a non-negative integer");
    if (pos_ - start > 15) Fail("integer too large");
    return std::stoll(std::string(text_.substr(start, pos_ - start)));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Sharding Sharding::Parse(std::string_view text) { return ShardingParser(text).Parse(); }

}  // namespace podsim::ir
