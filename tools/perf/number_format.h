// Number rendering that must match the Java original byte for byte: java.text.DecimalFormat
// patterns "0.0", "0.00", "0.000" (HALF_EVEN on the exact binary value, no grouping) left-padded
// to a minimum width, and Double.toString (used by Jackson for JSON doubles and map keys).
// Pure functions; safe from any thread.
#pragma once

#include <string>

namespace shale::perf {

// DecimalFormat("0.<decimals zeros>") then left-padded with spaces to at least `width` chars.
std::string decimal_format(double v, int decimals, int width);

// Java Double.toString: shortest round-trip digits; plain notation for 1e-3 <= |v| < 1e7 (always
// with a fractional part, "1.0"), otherwise "d.dddE<exp>" ("8.35584E7", "5.0E-4").
std::string java_double(double v);

// The widths of the original's PaddingDecimalFormat instances.
inline std::string fmt_duration(double v) { return decimal_format(v, 1, 6); }
inline std::string fmt_rate(double v) { return decimal_format(v, 2, 9); }
inline std::string fmt_throughput(double v) { return decimal_format(v, 2, 6); }
inline std::string fmt_latency(double v) { return decimal_format(v, 3, 9); }
inline std::string fmt_count(double v) { return decimal_format(v, 2, 6); }

}  // namespace shale::perf
