#pragma once
// Distinct unit types: integer picosecond Time, Bytes, BytesPerSecond, FlopsPerSecond;
// byte counts as text ("8MiB" <-> 8388608).

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace podsim {

// A point in time or a duration, in integer picoseconds (about +-106 days). Events are
// ordered by it exactly; every conversion from a real number rounds once, to the nearest
// picosecond.
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time Picos(int64_t ps) { return Time(ps); }
  static constexpr Time Max() { return Time(std::numeric_limits<int64_t>::max()); }
  // The nearest whole picosecond (halves away from zero).
  static constexpr Time FromSeconds(double s) { return Time(RoundPs(s * 1e12)); }
  static constexpr Time FromMicros(double us) { return Time(RoundPs(us * 1e6)); }

  constexpr int64_t picos() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double micros() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr auto operator<=>(const Time&) const = default;
  // Sums, differences and multiples are checked: one that leaves the int64 picosecond range
  // (a loop of 1e18 trips, a transfer of years) throws podsim::Error instead of wrapping.
  constexpr Time operator+(Time o) const {
    int64_t r = 0;
    if (__builtin_add_overflow(ps_, o.ps_, &r)) ThrowOverflow("+", ps_, o.ps_);
    return Time(r);
  }
  constexpr Time operator-(Time o) const {
    int64_t r = 0;
    if (__builtin_sub_overflow(ps_, o.ps_, &r)) ThrowOverflow("-", ps_, o.ps_);
    return Time(r);
  }
  constexpr Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time& operator-=(Time o) { return *this = *this - o; }
  // n back-to-back copies of this duration.
  friend constexpr Time operator*(Time t, int64_t n) {
    int64_t r = 0;
    if (__builtin_mul_overflow(t.ps_, n, &r)) ThrowOverflow("*", t.ps_, n);
    return Time(r);
  }
  friend constexpr Time operator*(int64_t n, Time t) { return t * n; }
  // One of n equal parts of this duration, rounded toward zero; n != 0.
  constexpr Time operator/(int64_t n) const { return Time(ps_ / n); }
  // How many whole `d` fit in this duration (toward zero); d != 0.
  constexpr int64_t operator/(Time d) const { return ps_ / d.ps_; }
  // This duration times a real factor, to the nearest picosecond (halves away from zero).
  Time Scaled(double factor) const { return Time(RoundPs(static_cast<double>(ps_) * factor)); }
  // The smallest multiple of `unit` that is >= this; unit > 0.
  constexpr Time Ceil(Time unit) const {
    const int64_t q = ps_ / unit.ps_, r = ps_ % unit.ps_;
    return Time((q + (r > 0 ? 1 : 0)) * unit.ps_);
  }

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  static constexpr int64_t RoundPs(double ps) {
    // int64 picoseconds hold +-9.2e18 (about 106 days); beyond that, and for NaN, a conversion
    // would wrap.
    if (!(ps < 9.2e18 && ps > -9.2e18)) ThrowOutOfRange(ps);
    return static_cast<int64_t>(ps < 0 ? ps - 0.5 : ps + 0.5);
  }
  [[noreturn]] static void ThrowOutOfRange(double ps);
  [[noreturn]] static void ThrowOverflow(const char* op, int64_t a, int64_t b);

  int64_t ps_ = 0;
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

struct FlopsPerSecond {
  double value = 0;
  constexpr auto operator<=>(const FlopsPerSecond&) const = default;
};

// Time to move b at rate r, rounded up to whole picoseconds.
Time TransferTime(Bytes b, BytesPerSecond r);

// Human-readable bytes in binary units: "17.2 GiB", "16 GiB", "512 MiB", "1.5 KiB", "100 B".
std::string FormatBytes(double bytes);

// Parses sizes like "8MiB", "32MB", "4096", "1.5GiB", "8e6"; throws Error naming `what`.
int64_t ParseBytes(const std::string& text, const std::string& what);

}  // namespace podsim
