#pragma once
// Compact device orders (XLA's IotaTileAssignment / IotaReplicaGroupList): the devices of a tile
// assignment or of replica groups given as iota(N) reshaped to `reshape_dims`, transposed by
// `transpose_perm` and read in row-major order, so that a sharding over 65536 devices takes a
// few integers instead of 65536. Printed after "<=" as in HLO: "[4]" is 0,1,2,3 and
// "[2,2]T(1,0)" is 0,2,1,3.
//
// The same order seen as strided modes: position k (row-major over the transposed dims) has one
// digit per transposed dim, and device(k) = sum over dims of digit * stride, where the stride of
// reshape dim j is the product of reshape_dims after j. A list of modes (size, stride) in
// position order is the working form the partitioner uses to transpose tile arrays and to
// compute a partition's tile coordinates with a few divides instead of a table of N entries.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace podsim::ir {

// One digit of a mixed-radix decomposition of device ids: `size` values, each worth `stride`.
struct StridedMode {
  int64_t size = 1;
  int64_t stride = 1;
  bool operator==(const StridedMode&) const = default;
};

class IotaDevices {
 public:
  // Zero devices.
  IotaDevices() = default;
  // 0, 1, ..., n - 1 (n >= 0).
  static IotaDevices Range(int64_t n);
  // iota(product(reshape_dims)).reshape(reshape_dims).transpose(transpose_perm); throws
  // podsim::Error when a dim is < 1 or transpose_perm is not a permutation of its indices.
  static IotaDevices Create(std::vector<int64_t> reshape_dims, std::vector<int64_t> transpose_perm);
  // The order whose position k is sum of digit * stride over `modes` (position order, last
  // fastest); nullopt unless the modes cover 0..N-1 exactly once (their strides, sorted, are
  // the row-major strides of their sizes).
  static std::optional<IotaDevices> FromModes(const std::vector<StridedMode>& modes);
  // The iota form of an explicit list, or nullopt when it has none. O(N).
  static std::optional<IotaDevices> FromList(const std::vector<int64_t>& devices);

  // Canonical: no dim of size 1, no two consecutive transposed dims that are consecutive in the
  // reshape (they merge). Equal orders have equal canonical forms.
  const std::vector<int64_t>& reshape_dims() const { return reshape_dims_; }
  const std::vector<int64_t>& transpose_perm() const { return transpose_perm_; }
  int64_t size() const { return size_; }
  // Device at position k in [0, size()).
  int64_t At(int64_t k) const;
  // Position of `device`, or -1 when it is not in [0, size()).
  int64_t PositionOf(int64_t device) const;
  // True for 0, 1, ..., N - 1.
  bool IsRange() const { return reshape_dims_.size() <= 1; }
  // Modes in position order (one per canonical dim).
  std::vector<StridedMode> Modes() const;
  std::vector<int64_t> ToVector() const;
  // "[4]", "[2,2]T(1,0)"; "[0]" for zero devices.
  std::string ToString() const;

  bool operator==(const IotaDevices& o) const = default;

 private:
  std::vector<int64_t> reshape_dims_;
  std::vector<int64_t> transpose_perm_;
  int64_t size_ = 0;
};

// Replica groups in the compact form: `num_groups` groups of `group_size` partitions; group g
// is positions [g * group_size, (g + 1) * group_size) of `devices`. Printed
// "[2,4]<=[8]" (groups {0,1,2,3},{4,5,6,7}) or "[4,2]<=[2,4]T(1,0)" ({0,4},{1,5},{2,6},{3,7}).
struct IotaReplicaGroupList {
  IotaReplicaGroupList() = default;
  IotaReplicaGroupList(int64_t groups, int64_t size, IotaDevices order)
      : num_groups(groups), group_size(size), devices(std::move(order)) {}

  int64_t num_groups = 0;
  int64_t group_size = 0;
  IotaDevices devices;

  std::vector<std::vector<int64_t>> ToGroups() const;
  std::string ToString() const;
  bool operator==(const IotaReplicaGroupList&) const = default;
};

// Drops size-1 modes and merges neighbours that continue each other (a.stride ==
// b.stride * b.size, a before b).
std::vector<StridedMode> CanonicalModes(const std::vector<StridedMode>& modes);

// Splits `modes` (position order) so that each of `dims` (row-major over the same positions,
// same product) is a run of whole modes; returns the run of each dim (empty for size-1 dims),
// or nullopt when a dim boundary falls inside a mode at a point that is not a mixed-radix split
// (neither size divides the other).
std::optional<std::vector<std::vector<StridedMode>>> SplitModes(std::vector<StridedMode> modes,
                                                                const std::vector<int64_t>& dims);

// The finest common digits ("atoms") of several mode lists over 0..N-1: every mode becomes a
// run of atoms (major first). Returns, for each list, each mode's atoms concatenated in list
// order, or nullopt when the lists' digit boundaries do not form a divisibility chain (their
// mixed radices are incompatible). Atoms are identified by their stride.
std::optional<std::vector<std::vector<StridedMode>>> RefineModes(
    const std::vector<std::vector<StridedMode>>& lists, int64_t n);

// Value of the digits `modes` (major first) of `device`: sum of ((device / stride) % size) *
// weight, weight = product of the sizes after it.
int64_t ModesValue(const std::vector<StridedMode>& modes, int64_t device);
// Product of the sizes.
int64_t ModesSize(const std::vector<StridedMode>& modes);

}  // namespace podsim::ir
