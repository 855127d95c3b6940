#include "partitioner/sharding_util.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "base/error.h"

namespace podsim::partitioner {

int64_t NumTiles(const Sharding& s) {
  if (s.kind != Sharding::Kind::kTiled) return 1;
  int64_t n = 1;
  for (int64_t t : s.tile_dims) n *= t;
  return n;
}

std::vector<int64_t> TensorTileDims(const Sharding& s, int64_t rank) {
  if (s.kind != Sharding::Kind::kTiled) return std::vector<int64_t>(rank, 1);
  std::vector<int64_t> dims(s.tile_dims.begin(), s.tile_dims.begin() + rank);
  return dims;
}

int64_t ReplicationFactor(const Sharding& s) {
  return s.kind == Sharding::Kind::kTiled && s.last_tile_dim_replicate ? s.tile_dims.back() : 1;
}

Shape ShardShape(const Shape& global, const Sharding& s) {
  Shape out = global;
  std::vector<int64_t> tiles = TensorTileDims(s, global.rank());
  for (int64_t d = 0; d < global.rank(); ++d) {
    out.dims[d] = (global.dims[d] + tiles[d] - 1) / tiles[d];
  }
  return out;
}

std::vector<int64_t> ReplicaGroupOf(const Sharding& s, int64_t device) {
  if (s.kind != Sharding::Kind::kTiled || !s.last_tile_dim_replicate) return {device};
  std::vector<int64_t> index = s.TileIndexOf(device);
  if (index.empty()) return {device};
  std::vector<int64_t> group;
  for (int64_t r = 0; r < s.tile_dims.back(); ++r) {
    index.back() = r;
    group.push_back(s.DeviceAt(index));
  }
  return group;
}

int64_t DeviceMesh::num_devices() const {
  int64_t n = 1;
  for (int64_t s : axis_sizes) n *= s;
  return n;
}

DeviceMesh DeviceMesh::Parse(const std::string& text) {
  DeviceMesh mesh;
  auto fail = [&](const std::string& what) -> void {
    throw Error("mesh '" + text + "': " + what + " (expected e.g. 4x2 or x=4,y=2)");
  };
  auto parse_size = [&](const std::string& s) -> int64_t {
    if (s.empty() || s.size() > 9 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c); })) {
      fail("'" + s + "' is not a positive integer");
    }
    int64_t v = std::stoll(s);
    if (v < 1) fail("axis sizes must be >= 1");
    return v;
  };
  if (text.find('=') != std::string::npos) {
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) fail("'" + item + "' is not name=size");
      std::string name = item.substr(0, eq);
      if (std::find(mesh.axis_names.begin(), mesh.axis_names.end(), name) !=
          mesh.axis_names.end()) {
        fail("axis '" + name + "' appears twice");
      }
      mesh.axis_names.push_back(name);
      mesh.axis_sizes.push_back(parse_size(item.substr(eq + 1)));
    }
  } else {
    static const char* kNames[] = {"x", "y", "z", "w"};
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, 'x')) {
      if (mesh.axis_sizes.size() == 4) fail("at most 4 unnamed axes");
      mesh.axis_names.push_back(kNames[mesh.axis_sizes.size()]);
      mesh.axis_sizes.push_back(parse_size(item));
    }
  }
  if (mesh.axis_sizes.empty()) fail("no axes");
  return mesh;
}

std::vector<int64_t> DeviceMesh::Coordinates(int64_t device) const {
  std::vector<int64_t> c(axis_sizes.size());
  for (int64_t a = static_cast<int64_t>(axis_sizes.size()) - 1; a >= 0; --a) {
    c[a] = device % axis_sizes[a];
    device /= axis_sizes[a];
  }
  return c;
}

int64_t DeviceMesh::DeviceAt(const std::vector<int64_t>& coords) const {
  int64_t d = 0;
  for (size_t a = 0; a < axis_sizes.size(); ++a) d = d * axis_sizes[a] + coords[a];
  return d;
}

std::string DeviceMesh::ToString() const {
  std::string out;
  for (size_t a = 0; a < axis_sizes.size(); ++a) {
    if (a) out += ",";
    out += axis_names[a] + "=" + std::to_string(axis_sizes[a]);
  }
  return out;
}

}  // namespace podsim::partitioner
