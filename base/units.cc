#include "base/units.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "base/format.h"

namespace podsim {

void Time::ThrowOutOfRange(double ps) {
  throw Error("time of " + FormatG(ps * 1e-12) + " s is out of range (at most about 1e7 s, 106 days)");
}

void Time::ThrowOverflow(const char* op, int64_t a, int64_t b) {
  const bool time_times_count = std::string(op) == "*";
  throw Error("time out of range: " + FormatG(static_cast<double>(a) * 1e-12) + " s " + op + " " +
              (time_times_count ? std::to_string(b) : FormatG(static_cast<double>(b) * 1e-12) + " s") +
              " leaves the picosecond clock's range (about 1e7 s, 106 days)");
}

Time TransferTime(Bytes b, BytesPerSecond r) {
  if (b.value < 0) throw Error("TransferTime: negative byte count " + std::to_string(b.value));
  if (!(r.value > 0) || !std::isfinite(r.value)) {
    throw Error("TransferTime: bandwidth must be a positive finite rate, got " +
                std::to_string(r.value) + " B/s");
  }
  if (b.value == 0) return Time();
  // long double keeps 64 mantissa bits: b * 1e12 is exact below ~1.8e7 bytes and within 1e-19
  // relative above, so ceil() does not add a spurious picosecond to exact results.
  const long double ps = static_cast<long double>(b.value) * 1e12L / static_cast<long double>(r.value);
  if (!(ps < 9.2e18L)) {
    throw Error("a transfer of " + std::to_string(b.value) + " bytes at " + FormatG(r.value) +
                " B/s takes " + FormatG(static_cast<double>(ps * 1e-12L)) +
                " s: out of the picosecond clock's range (about 1e7 s, 106 days)");
  }
  return Time::Picos(static_cast<int64_t>(std::ceil(ps)));
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double v = bytes;
  while (std::abs(v) >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[64];
  if (unit == 0 || std::abs(v - std::round(v)) < 0.05) {
    std::snprintf(buf, sizeof(buf), "%.0f %s", std::round(v), kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

int64_t ParseBytes(const std::string& text, const std::string& what) {
  size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) ||
                               text[pos] == '.' || text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
  }
  std::string number = text.substr(0, pos), unit = text.substr(pos);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "KB" || unit == "kB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(number, &used);
    if (used != number.size()) scale = 0;
  } catch (const std::exception&) {
    scale = 0;
  }
  double bytes = v * scale;
  if (scale == 0 || !(bytes >= 1) || bytes > 1e15 || bytes != std::floor(bytes)) {
    throw ConfigError(what + ": '" + text +
                "' is not a whole positive byte count (e.g. 8MiB, 32MB, 4096)");
  }
  return static_cast<int64_t>(bytes);
}

}  // namespace podsim
