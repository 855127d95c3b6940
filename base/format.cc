#include "base/format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace podsim {

std::string FormatShortest(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::string FormatG(double v, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", significant, v);
  return buf;
}

std::string FormatFixed(double v, int decimals) {
  char buf[352];  // %f of the largest double has 309 integer digits
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string FormatSi(double v) {
  static const char* kSuffix[] = {"", "K", "M", "G", "T", "P"};
  int k = 0;
  while (v >= 1000 && k < 5) {
    v /= 1000;
    ++k;
  }
  std::ostringstream ss;
  ss << std::setprecision(4) << v << kSuffix[k];
  return ss.str();
}

}  // namespace podsim
