#include "perf/number_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shale::perf {

std::string decimal_format(double v, int decimals, int width) {
  std::string s;
  if (std::isnan(v)) {
    s = "NaN";  // DecimalFormat prints the NaN symbol "\uFFFD"; ASCII keeps logs parseable.
  } else if (std::isinf(v)) {
    s = v > 0 ? "\u221E" : "-\u221E";
  } else {
    // glibc printf converts the exact binary value and rounds exact ties to even, which is
    // what DecimalFormat's HALF_EVEN does since JDK 8.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    s = buf;
  }
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<size_t>(width) - s.size(), ' ');
  return s;
}

std::string java_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: "d.ddde[+-]xx".
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  double a = std::fabs(v);
  if (a >= 1e-3 && a < 1e7) {
    std::string out;
    if (exp >= 0) {
      size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out = digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1) + "." + (digits.size() > 1 ? digits.substr(1) : "0");
  return sign + mant + "E" + std::to_string(exp);
}

}  // namespace shale::perf
