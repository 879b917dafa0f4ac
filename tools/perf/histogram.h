// A log-linear (HdrHistogram-layout) histogram of non-negative integer values, with the exact
// statistics rules of Java HdrHistogram 2.1.12 (mean by median-equivalent values, ceil-rank
// percentiles, percentile iterator with 100 ticks per half distance). Debian ships HdrHistogram
// only for Java and Go, so this is a small re-implementation of the parts the tool needs.
//
// Threading: a Histogram is not synchronised; callers hold a lock (see stats.h). Invariant:
// total_count() == sum of counts; min_index_/max_index_ bound the non-zero counts so that
// reset(), scans and copies touch only the used range of the (large, dense) counts array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace shale::perf {

class Histogram {
 public:
  // lowest discernible value is 1; `highest` is the highest trackable value.
  Histogram(int64_t highest, int significant_digits);

  // Records v (caller clamps/drops out-of-range values; v must be in [0, highest]).
  void record(int64_t v);
  void reset();
  void add(const Histogram& other);  // same layout required
  int64_t total_count() const { return total_; }

  double mean() const;
  int64_t min() const;
  int64_t max() const;
  int64_t value_at_percentile(double p) const;
  // value_at_percentile() of several ascending percentiles and the mean, in one pass over the
  // counts (the statistics thread does this every reporting interval).
  std::vector<int64_t> values_at_percentiles(const std::vector<double>& ascending,
                                             double* mean_out) const;
  // (actual cumulative percentile, highest equivalent value) pairs of Java's
  // percentiles(ticksPerHalfDistance) iteration, collapsed into a sorted map like a TreeMap.
  std::map<double, int64_t> percentile_map(int ticks_per_half_distance) const;

  int64_t lowest_equivalent(int64_t v) const;
  int64_t highest_equivalent(int64_t v) const;
  int64_t median_equivalent(int64_t v) const;
  size_t counts_length() const { return counts_.size(); }

 private:
  int bucket_index(int64_t v) const;
  int sub_bucket_index(int64_t v, int bucket) const;
  size_t index_of(int64_t v) const;
  int64_t value_from_index(size_t i) const;
  int64_t equivalent_range(int64_t v) const;

  int64_t highest_;
  int unit_magnitude_ = 0;
  int sub_bucket_count_magnitude_ = 0;
  int sub_bucket_half_count_magnitude_ = 0;
  int64_t sub_bucket_count_ = 0;
  int64_t sub_bucket_half_count_ = 0;
  int64_t sub_bucket_mask_ = 0;
  int leading_zero_count_base_ = 0;
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
  int64_t max_value_ = 0;
  int64_t min_non_zero_value_ = INT64_MAX;
  size_t min_index_ = SIZE_MAX;
  size_t max_index_ = 0;
};

}  // namespace shale::perf
