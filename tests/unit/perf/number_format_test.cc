#include "perf/number_format.h"

#include <gtest/gtest.h>

namespace shale::perf {
namespace {

TEST(PerfNumberFormat, HalfEvenOnTheExactBinaryValue) {
  EXPECT_EQ(decimal_format(0.125, 2, 0), "0.12");  // exact tie -> even
  EXPECT_EQ(decimal_format(0.375, 2, 0), "0.38");  // exact tie -> even
  EXPECT_EQ(decimal_format(2.5, 0, 0), "2");
  EXPECT_EQ(decimal_format(3.5, 0, 0), "4");
  EXPECT_EQ(decimal_format(1.005, 2, 0), "1.00");  // 1.00499999... in binary
  EXPECT_EQ(decimal_format(0.0625, 3, 0), "0.062");
  EXPECT_EQ(decimal_format(0.0, 3, 0), "0.000");
}

TEST(PerfNumberFormat, PaddedWidthsOfTheOriginal) {
  EXPECT_EQ(fmt_duration(230.0), " 230.0");
  EXPECT_EQ(fmt_duration(1.0), "   1.0");
  EXPECT_EQ(fmt_duration(12345.67), "12345.7");  // never truncated
  EXPECT_EQ(fmt_rate(803.83), "   803.83");
  EXPECT_EQ(fmt_rate(0), "     0.00");
  EXPECT_EQ(fmt_rate(1234567.891), "1234567.89");
  EXPECT_EQ(fmt_throughput(50.24), " 50.24");
  EXPECT_EQ(fmt_throughput(150.72), "150.72");
  EXPECT_EQ(fmt_latency(1.519), "    1.519");
  EXPECT_EQ(fmt_latency(136.785), "  136.785");
  EXPECT_EQ(fmt_count(0.0), "  0.00");
  EXPECT_EQ(fmt_count(14.68), " 14.68");
}

TEST(PerfNumberFormat, JavaDoubleToString) {
  EXPECT_EQ(java_double(1.0), "1.0");
  EXPECT_EQ(java_double(0.0), "0.0");
  EXPECT_EQ(java_double(-1.5), "-1.5");
  EXPECT_EQ(java_double(49.93), "49.93");
  EXPECT_EQ(java_double(99.9023), "99.9023");
  EXPECT_EQ(java_double(100.0), "100.0");
  EXPECT_EQ(java_double(480000.0), "480000.0");
  EXPECT_EQ(java_double(9999999.0), "9999999.0");
  EXPECT_EQ(java_double(1e7), "1.0E7");
  EXPECT_EQ(java_double(8.35584E7), "8.35584E7");
  EXPECT_EQ(java_double(2.506752E10), "2.506752E10");
  EXPECT_EQ(java_double(0.001), "0.001");
  EXPECT_EQ(java_double(5.0E-4), "5.0E-4");
  EXPECT_EQ(java_double(1.2345E-5), "1.2345E-5");
  EXPECT_EQ(java_double(3714.6920838183933), "3714.6920838183933");
}

}  // namespace
}  // namespace shale::perf
