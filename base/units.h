#pragma once
// Distinct unit types: integer picosecond Time, Bytes, BytesPerSecond, Flops, FlopsPerSecond;
// byte counts as text ("8MiB" <-> 8388608).

#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace podsim {

// A point in time or a duration, in integer picoseconds.
struct Time {
  int64_t ps = 0;
  static constexpr Time Max() { return Time{std::numeric_limits<int64_t>::max()}; }
  // The nearest whole picosecond (halves away from zero).
  static constexpr Time FromSeconds(double s) { return Time{RoundPs(s * 1e12)}; }
  static constexpr Time FromMicros(double us) { return Time{RoundPs(us * 1e6)}; }
  constexpr double seconds() const { return static_cast<double>(ps) * 1e-12; }
  constexpr double micros() const { return static_cast<double>(ps) * 1e-6; }
  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time{ps + o.ps}; }
  constexpr Time operator-(Time o) const { return Time{ps - o.ps}; }
  constexpr Time& operator+=(Time o) { ps += o.ps; return *this; }

 private:
  static constexpr int64_t RoundPs(double ps) {
    return static_cast<int64_t>(ps < 0 ? ps - 0.5 : ps + 0.5);
  }
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

// Human-readable bytes in binary units: "17.2 GiB", "16 GiB", "512 MiB", "1.5 KiB", "100 B".
std::string FormatBytes(double bytes);

// Parses sizes like "8MiB", "32MB", "4096", "1.5GiB", "8e6"; throws Error naming `what`.
int64_t ParseBytes(const std::string& text, const std::string& what);

}  // namespace podsim
