#include "ir/sharding.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/error.h"
#include "ir/shape.h"

namespace podsim::ir {

Sharding Sharding::Maximal(int64_t device) {
  Sharding s;
  s.kind = Kind::kMaximal;
  s.device = device;
  return s;
}

Sharding Sharding::Tiled(std::vector<int64_t> tile_dims, DeviceList devices,
                         bool last_tile_dim_replicate) {
  Sharding s;
  s.kind = Kind::kTiled;
  s.tile_dims = std::move(tile_dims);
  s.devices = std::move(devices);
  s.last_tile_dim_replicate = last_tile_dim_replicate;
  return s;
}

Sharding Sharding::TiledIota(std::vector<int64_t> tile_dims, bool last_tile_dim_replicate) {
  int64_t n = 1;
  for (int64_t t : tile_dims) {
    if (t < 1 || __builtin_mul_overflow(n, t, &n)) {
      throw Error("tile dims " + DimsToString(tile_dims) +
                  ": each must be >= 1 and their product fit int64");
    }
  }
  return Tiled(std::move(tile_dims), DeviceList(IotaDevices::Range(n)), last_tile_dim_replicate);
}

int64_t DeviceList::PositionOf(int64_t device) const {
  if (iota_) return iota_->PositionOf(device);
  for (size_t k = 0; k < list_.size(); ++k) {
    if (list_[k] == device) return static_cast<int64_t>(k);
  }
  return -1;
}

std::string DeviceList::ToString() const {
  if (iota_) return "<=" + iota_->ToString();
  std::string out;
  for (size_t i = 0; i < list_.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(list_[i]);
  }
  return out;
}

bool DeviceList::operator==(const DeviceList& o) const {
  if (iota_ && o.iota_) return *iota_ == *o.iota_;
  if (!iota_ && !o.iota_) return list_ == o.list_;
  if (size() != o.size()) return false;
  for (int64_t k = 0; k < size(); ++k) {
    if ((*this)[k] != o[k]) return false;
  }
  return true;
}

bool DeviceList::operator<(const DeviceList& o) const {
  if (iota_ && o.iota_ && *iota_ == *o.iota_) return false;
  const int64_t n = std::min(size(), o.size());
  for (int64_t k = 0; k < n; ++k) {
    const int64_t a = (*this)[k], b = o[k];
    if (a != b) return a < b;
  }
  return size() < o.size();
}

int64_t Sharding::DeviceAt(const std::vector<int64_t>& index) const {
  int64_t linear = 0;
  for (size_t d = 0; d < tile_dims.size(); ++d) linear = linear * tile_dims[d] + index.at(d);
  if (linear < 0 || linear >= devices.size()) {
    throw Error("sharding " + ToString() + ": no tile at that index");
  }
  return devices[linear];
}

std::vector<int64_t> Sharding::ShardDims(std::vector<int64_t> dims) const {
  const size_t rank = dims.size();
  if (kind != Kind::kTiled || tile_dims.size() != rank + (last_tile_dim_replicate ? 1 : 0)) {
    return dims;
  }
  for (size_t d = 0; d < rank; ++d) {
    if (tile_dims[d] >= 1) {  // ceil(dims / tiles), without overflow
      dims[d] = dims[d] / tile_dims[d] + (dims[d] % tile_dims[d] != 0 ? 1 : 0);
    }
  }
  return dims;
}

std::vector<int64_t> Sharding::TileIndexOf(int64_t device) const {
  if (kind != Kind::kTiled) return {};
  int64_t linear = devices.PositionOf(device);
  if (linear < 0) return {};
  std::vector<int64_t> index(tile_dims.size());
  for (int64_t d = static_cast<int64_t>(tile_dims.size()) - 1; d >= 0; --d) {
    index[d] = linear % tile_dims[d];
    linear /= tile_dims[d];
  }
  return index;
}

std::optional<Sharding> StackedSharding(std::optional<Sharding> s) {
  if (s && s->kind == Sharding::Kind::kTiled) s->tile_dims.insert(s->tile_dims.begin(), 1);
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
  out += "]" + devices.ToString();
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
      if (Consume("<=")) {
        s.devices = DeviceList(Iota());
      } else {
        std::vector<int64_t> devices = {Int()};
        while (Consume(",")) devices.push_back(Int());
        s.devices = std::move(devices);
      }
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
  // "[2,2]T(1,0)" or "[4]".
  IotaDevices Iota() {
    Expect("[");
    std::vector<int64_t> dims = {Int()};
    while (Consume(",")) dims.push_back(Int());
    Expect("]");
    std::vector<int64_t> perm(dims.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
    if (Consume("T(")) {
      perm = {Int()};
      while (Consume(",")) perm.push_back(Int());
      Expect(")");
    }
    try {
      return IotaDevices::Create(std::move(dims), std::move(perm));
    } catch (const Error& e) {
      Fail(e.what());
    }
  }
  int64_t Int() {
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) Fail("expected a non-negative integer");
    // Any non-negative int64, as the proto form allows (so every loaded module prints back to
    // text that parses); beyond it, an error.
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (ec != std::errc() || end != text_.data() + pos_) {
      Fail("integer " + std::string(text_.substr(start, pos_ - start)) + " does not fit int64");
    }
    return value;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Sharding Sharding::Parse(std::string_view text) { return ShardingParser(text).Parse(); }

}  // namespace podsim::ir
