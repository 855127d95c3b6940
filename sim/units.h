#pragma once
// Distinct unit types: integer picosecond Time, Bytes, BytesPerSecond, Flops.

#include <compare>
#include <cstdint>
#include <limits>

namespace podsim::sim {

// A point in time or a duration, in integer picoseconds.
struct Time {
  int64_t ps = 0;
  static constexpr Time Max() { return Time{std::numeric_limits<int64_t>::max()}; }
  static constexpr Time FromSeconds(double s) { return Time{static_cast<int64_t>(s * 1e12 + 0.5)}; }
  static constexpr Time FromMicros(double us) { return Time{static_cast<int64_t>(us * 1e6 + 0.5)}; }
  constexpr double seconds() const { return static_cast<double>(ps) * 1e-12; }
  constexpr double micros() const { return static_cast<double>(ps) * 1e-6; }
  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time{ps + o.ps}; }
  constexpr Time operator-(Time o) const { return Time{ps - o.ps}; }
  constexpr Time& operator+=(Time o) { ps += o.ps; return *this; }
};

struct Bytes {
  int64_t value = 0;
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes{value + o.value}; }
};

struct BytesPerSecond {
  double value = 0;
  constexpr auto operator<=>(const BytesPerSecond&) const = default;
};

struct Flops {
  double value = 0;
  constexpr auto operator<=>(const Flops&) const = default;
};

// Time to move b at rate r, rounded up to whole picoseconds.
Time TransferTime(Bytes b, BytesPerSecond r);

}  // namespace podsim::sim
