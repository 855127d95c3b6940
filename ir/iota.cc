#include "ir/iota.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace podsim::ir {

namespace {

std::string IntList(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t k = 0; k < v.size(); ++k) {
    if (k) out += ",";
    out += std::to_string(v[k]);
  }
  return out;
}

// Row-major strides of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t k = static_cast<int64_t>(dims.size()) - 2; k >= 0; --k) {
    s[k] = s[k + 1] * dims[k + 1];
  }
  return s;
}

}  // namespace

IotaDevices IotaDevices::Range(int64_t n) {
  if (n < 0) throw Error("iota device list of negative size " + std::to_string(n));
  IotaDevices d;
  d.size_ = n;
  if (n == 0) {
    d.reshape_dims_ = {0};
    d.transpose_perm_ = {0};
  } else if (n > 1) {
    d.reshape_dims_ = {n};
    d.transpose_perm_ = {0};
  }
  return d;
}

IotaDevices IotaDevices::Create(std::vector<int64_t> reshape_dims,
                                std::vector<int64_t> transpose_perm) {
  const size_t r = reshape_dims.size();
  auto fail = [&](const std::string& what) {
    throw Error("iota devices [" + IntList(reshape_dims) + "]T(" + IntList(transpose_perm) +
                "): " + what);
  };
  if (transpose_perm.size() != r) fail("the transpose needs one entry per reshape dim");
  std::vector<bool> seen(r, false);
  for (int64_t p : transpose_perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[p]) fail("not a permutation");
    seen[p] = true;
  }
  int64_t n = 1;
  for (int64_t d : reshape_dims) {
    if (d < 1) fail("reshape dims must be >= 1");
    if (n > (int64_t{1} << 40) / d) fail("too many devices");
    n *= d;
  }
  const std::vector<int64_t> strides = Strides(reshape_dims);
  std::vector<StridedMode> modes;
  for (int64_t p : transpose_perm) modes.push_back({reshape_dims[p], strides[p]});
  std::optional<IotaDevices> out = FromModes(modes);
  if (!out) fail("internal: modes do not cover the devices");
  return *out;
}

std::optional<IotaDevices> IotaDevices::FromModes(const std::vector<StridedMode>& modes) {
  std::vector<StridedMode> c = CanonicalModes(modes);
  for (const StridedMode& m : c) {
    if (m.size < 1 || m.stride < 1) return std::nullopt;
  }
  std::vector<size_t> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return c[a].stride > c[b].stride; });
  int64_t expect = 1;
  for (size_t k = order.size(); k-- > 0;) {
    if (c[order[k]].stride != expect) return std::nullopt;
    expect *= c[order[k]].size;
  }
  IotaDevices d;
  d.size_ = expect;
  std::vector<int64_t> rank_of(c.size());
  for (size_t k = 0; k < order.size(); ++k) {
    d.reshape_dims_.push_back(c[order[k]].size);
    rank_of[order[k]] = static_cast<int64_t>(k);
  }
  d.transpose_perm_ = rank_of;
  return d;
}

std::optional<IotaDevices> IotaDevices::FromList(const std::vector<int64_t>& devices) {
  const int64_t n = static_cast<int64_t>(devices.size());
  if (n == 0) return Range(0);
  // Greedy from the fastest digit: the next mode's stride is the device at position P (the
  // product of the sizes found so far) and its size the run of its multiples at steps of P.
  std::vector<StridedMode> minor_first;
  int64_t p = 1;
  while (p < n) {
    const int64_t stride = devices[p];
    if (stride <= 0) return std::nullopt;
    int64_t m = 1;
    while (m * p < n && devices[m * p] == m * stride) ++m;
    if (m < 2 || n % (m * p) != 0) return std::nullopt;
    minor_first.push_back({m, stride});
    p *= m;
  }
  std::vector<StridedMode> modes(minor_first.rbegin(), minor_first.rend());
  std::optional<IotaDevices> d = FromModes(modes);
  if (!d || d->size() != n) return std::nullopt;
  for (int64_t k = 0; k < n; ++k) {
    if (d->At(k) != devices[k]) return std::nullopt;
  }
  return d;
}

int64_t IotaDevices::At(int64_t k) const {
  if (size_ <= 1) return 0;
  const std::vector<int64_t> strides = Strides(reshape_dims_);
  int64_t device = 0;
  for (size_t j = transpose_perm_.size(); j-- > 0;) {
    const int64_t dim = reshape_dims_[transpose_perm_[j]];
    device += (k % dim) * strides[transpose_perm_[j]];
    k /= dim;
  }
  return device;
}

int64_t IotaDevices::PositionOf(int64_t device) const {
  if (device < 0 || device >= size_) return -1;
  if (size_ == 1) return 0;
  const std::vector<int64_t> strides = Strides(reshape_dims_);
  int64_t position = 0;
  for (int64_t p : transpose_perm_) {
    position = position * reshape_dims_[p] + (device / strides[p]) % reshape_dims_[p];
  }
  return position;
}

std::vector<StridedMode> IotaDevices::Modes() const {
  if (size_ <= 1) return {};
  const std::vector<int64_t> strides = Strides(reshape_dims_);
  std::vector<StridedMode> modes;
  for (int64_t p : transpose_perm_) modes.push_back({reshape_dims_[p], strides[p]});
  return modes;
}

std::vector<int64_t> IotaDevices::ToVector() const {
  std::vector<int64_t> out(size_);
  const std::vector<StridedMode> modes = Modes();
  std::vector<int64_t> digit(modes.size(), 0);
  int64_t device = 0;
  for (int64_t k = 0; k < size_; ++k) {
    out[k] = device;
    for (size_t j = modes.size(); j-- > 0;) {  // odometer, last mode fastest
      device += modes[j].stride;
      if (++digit[j] < modes[j].size) break;
      device -= modes[j].stride * modes[j].size;
      digit[j] = 0;
    }
  }
  return out;
}

std::string IotaDevices::ToString() const {
  if (size_ <= 1) return "[" + std::to_string(size_) + "]";
  std::string out = "[" + IntList(reshape_dims_) + "]";
  if (!IsRange()) out += "T(" + IntList(transpose_perm_) + ")";
  return out;
}

std::vector<std::vector<int64_t>> IotaReplicaGroupList::ToGroups() const {
  const std::vector<int64_t> all = devices.ToVector();
  std::vector<std::vector<int64_t>> groups(num_groups);
  for (int64_t g = 0; g < num_groups; ++g) {
    groups[g].assign(all.begin() + g * group_size, all.begin() + (g + 1) * group_size);
  }
  return groups;
}

std::string IotaReplicaGroupList::ToString() const {
  return "[" + std::to_string(num_groups) + "," + std::to_string(group_size) +
         "]<=" + devices.ToString();
}

std::vector<StridedMode> CanonicalModes(const std::vector<StridedMode>& modes) {
  std::vector<StridedMode> out;
  for (const StridedMode& m : modes) {
    if (m.size == 1) continue;
    if (!out.empty() && out.back().stride == m.stride * m.size) {
      out.back() = {out.back().size * m.size, m.stride};
      continue;
    }
    out.push_back(m);
  }
  return out;
}

std::optional<std::vector<std::vector<StridedMode>>> SplitModes(std::vector<StridedMode> modes,
                                                                const std::vector<int64_t>& dims) {
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d < 1 || __builtin_mul_overflow(total, d, &total)) return std::nullopt;  // cannot match
  }
  if (total != ModesSize(modes)) return std::nullopt;
  std::vector<std::vector<StridedMode>> runs(dims.size());
  int64_t i = static_cast<int64_t>(modes.size()) - 1;
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    int64_t need = dims[d];
    std::vector<StridedMode>& run = runs[d];
    while (need > 1) {
      while (i >= 0 && modes[i].size == 1) --i;
      if (i < 0) return std::nullopt;
      StridedMode& m = modes[i];
      if (m.size <= need) {
        if (need % m.size != 0) return std::nullopt;
        run.push_back(m);
        need /= m.size;
        --i;
      } else {
        if (m.size % need != 0) return std::nullopt;
        run.push_back({need, m.stride});
        m = {m.size / need, m.stride * need};
        need = 1;
      }
    }
    std::reverse(run.begin(), run.end());
  }
  return runs;
}

std::optional<std::vector<std::vector<StridedMode>>> RefineModes(
    const std::vector<std::vector<StridedMode>>& lists, int64_t n) {
  std::vector<int64_t> bounds = {1, n};
  for (const auto& list : lists) {
    for (const StridedMode& m : list) {
      if (m.size == 1) continue;
      bounds.push_back(m.stride);
      bounds.push_back(m.stride * m.size);
    }
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    if (bounds[k] < 1 || bounds[k + 1] % bounds[k] != 0) return std::nullopt;
  }
  std::vector<std::vector<StridedMode>> out;
  for (const auto& list : lists) {
    std::vector<StridedMode> atoms;
    for (const StridedMode& m : list) {
      if (m.size == 1) continue;
      // Atoms from the top of the mode down to its stride.
      auto hi = std::lower_bound(bounds.begin(), bounds.end(), m.stride * m.size);
      auto lo = std::lower_bound(bounds.begin(), bounds.end(), m.stride);
      for (auto b = hi; b != lo; --b) atoms.push_back({*b / *(b - 1), *(b - 1)});
    }
    out.push_back(std::move(atoms));
  }
  return out;
}

int64_t ModesValue(const std::vector<StridedMode>& modes, int64_t device) {
  int64_t v = 0;
  for (const StridedMode& m : modes) v = v * m.size + (device / m.stride) % m.size;
  return v;
}

int64_t ModesSize(const std::vector<StridedMode>& modes) {
  int64_t n = 1;
  for (const StridedMode& m : modes) n *= m.size;
  return n;
}

}  // namespace podsim::ir
