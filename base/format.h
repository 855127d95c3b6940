#pragma once
// Numbers as text: the only number formatters of podsim. Byte counts are formatted and parsed
// in base/units.h.

#include <string>

namespace podsim {

// The shortest text that reads back as the same double ("0.1", "1e+20", "-3"); "nan", "inf",
// "-inf" for the non-finite values. For results files and the IR's literals.
std::string FormatShortest(double v);

// printf's %.<significant>g: FormatG(1e11) == "1e+11", FormatG(2.5) == "2.5",
// FormatG(1.0 / 3, 9) == "0.333333333". For messages and human-facing tables.
std::string FormatG(double v, int significant = 6);

// printf's %.<decimals>f: FormatFixed(1.25, 1) == "1.2" (round half to even on ties, as printf).
std::string FormatFixed(double v, int decimals);

// A count with a decimal SI suffix and 4 significant digits: 1234567 -> "1.235M", 999 -> "999",
// 2.5e13 -> "25T". Negative values are printed without a suffix.
std::string FormatSi(double v);

}  // namespace podsim
