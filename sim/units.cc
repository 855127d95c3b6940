#include "sim/units.h"

#include <cmath>
#include <string>

#include "ir/error.h"

namespace podsim::sim {

Time TransferTime(Bytes b, BytesPerSecond r) {
  if (b.value < 0) throw Error("TransferTime: negative byte count " + std::to_string(b.value));
  if (!(r.value > 0) || !std::isfinite(r.value)) {
    throw Error("TransferTime: bandwidth must be a positive finite rate, got " +
                std::to_string(r.value) + " B/s");
  }
  if (b.value == 0) return Time{0};
  // long double keeps 64 mantissa bits: b * 1e12 is exact below ~1.8e7 bytes and within 1e-19
  // relative above, so ceil() does not add a spurious picosecond to exact results.
  const long double ps = static_cast<long double>(b.value) * 1e12L / static_cast<long double>(r.value);
  return Time{static_cast<int64_t>(std::ceil(ps))};
}

}  // namespace podsim::sim
