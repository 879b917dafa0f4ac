#include "perf/histogram.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace shale::perf {

Histogram::Histogram(int64_t highest, int significant_digits) : highest_(highest) {
  if (significant_digits < 0 || significant_digits > 5 || highest < 2) {
    throw std::invalid_argument("invalid histogram range");
  }
  int64_t largest_single_unit = 2 * static_cast<int64_t>(std::pow(10, significant_digits));
  unit_magnitude_ = 0;  // lowest discernible value 1
  sub_bucket_count_magnitude_ =
      static_cast<int>(std::ceil(std::log(static_cast<double>(largest_single_unit)) / std::log(2)));
  sub_bucket_half_count_magnitude_ = std::max(sub_bucket_count_magnitude_, 1) - 1;
  sub_bucket_count_ = int64_t{1} << sub_bucket_count_magnitude_;
  sub_bucket_half_count_ = sub_bucket_count_ / 2;
  sub_bucket_mask_ = (sub_bucket_count_ - 1) << unit_magnitude_;
  leading_zero_count_base_ = 64 - unit_magnitude_ - sub_bucket_count_magnitude_;
  int64_t smallest_untrackable = sub_bucket_count_ << unit_magnitude_;
  int buckets = 1;
  while (smallest_untrackable <= highest) {
    if (smallest_untrackable > INT64_MAX / 2) {
      ++buckets;
      break;
    }
    smallest_untrackable <<= 1;
    ++buckets;
  }
  counts_.assign(static_cast<size_t>(buckets + 1) * static_cast<size_t>(sub_bucket_half_count_), 0);
}

int Histogram::bucket_index(int64_t v) const {
  return leading_zero_count_base_ - __builtin_clzll(static_cast<uint64_t>(v | sub_bucket_mask_));
}

int Histogram::sub_bucket_index(int64_t v, int bucket) const {
  return static_cast<int>(v >> (bucket + unit_magnitude_));
}

size_t Histogram::index_of(int64_t v) const {
  int b = bucket_index(v);
  int sb = sub_bucket_index(v, b);
  int64_t base = static_cast<int64_t>(b + 1) << sub_bucket_half_count_magnitude_;
  return static_cast<size_t>(base + (sb - sub_bucket_half_count_));
}

int64_t Histogram::value_from_index(size_t i) const {
  int64_t bucket = (static_cast<int64_t>(i) >> sub_bucket_half_count_magnitude_) - 1;
  int64_t sub = (static_cast<int64_t>(i) & (sub_bucket_half_count_ - 1)) + sub_bucket_half_count_;
  if (bucket < 0) {
    sub -= sub_bucket_half_count_;
    bucket = 0;
  }
  return sub << (bucket + unit_magnitude_);
}

int64_t Histogram::equivalent_range(int64_t v) const {
  int b = bucket_index(v);
  int sb = sub_bucket_index(v, b);
  int adjusted = sb >= sub_bucket_count_ ? b + 1 : b;
  return int64_t{1} << (unit_magnitude_ + adjusted);
}

int64_t Histogram::lowest_equivalent(int64_t v) const {
  int b = bucket_index(v);
  int sb = sub_bucket_index(v, b);
  return static_cast<int64_t>(sb) << (b + unit_magnitude_);
}

int64_t Histogram::highest_equivalent(int64_t v) const {
  return lowest_equivalent(v) + equivalent_range(v) - 1;
}

int64_t Histogram::median_equivalent(int64_t v) const {
  return lowest_equivalent(v) + (equivalent_range(v) >> 1);
}

void Histogram::record(int64_t v) {
  if (v < 0 || v > highest_) throw std::out_of_range("histogram value out of range");
  size_t i = index_of(v);
  ++counts_[i];
  ++total_;
  min_index_ = std::min(min_index_, i);
  max_index_ = std::max(max_index_, i);
  max_value_ = std::max(max_value_, v);
  if (v != 0) min_non_zero_value_ = std::min(min_non_zero_value_, v);
}

void Histogram::reset() {
  if (total_ > 0) {
    std::fill(counts_.begin() + static_cast<ptrdiff_t>(min_index_),
              counts_.begin() + static_cast<ptrdiff_t>(max_index_) + 1, 0);
  }
  total_ = 0;
  max_value_ = 0;
  min_non_zero_value_ = INT64_MAX;
  min_index_ = SIZE_MAX;
  max_index_ = 0;
}

void Histogram::add(const Histogram& o) {
  if (o.counts_.size() != counts_.size()) throw std::invalid_argument("histogram layout differs");
  if (o.total_ == 0) return;
  for (size_t i = o.min_index_; i <= o.max_index_; ++i) counts_[i] += o.counts_[i];
  total_ += o.total_;
  min_index_ = std::min(min_index_, o.min_index_);
  max_index_ = std::max(max_index_, o.max_index_);
  max_value_ = std::max(max_value_, o.max_value_);
  min_non_zero_value_ = std::min(min_non_zero_value_, o.min_non_zero_value_);
}

double Histogram::mean() const {
  if (total_ == 0) return 0.0;
  double sum = 0;
  for (size_t i = min_index_; i <= max_index_; ++i) {
    if (counts_[i] != 0) {
      sum += static_cast<double>(median_equivalent(value_from_index(i))) *
             static_cast<double>(counts_[i]);
    }
  }
  return sum / static_cast<double>(total_);
}

int64_t Histogram::min() const {
  if (total_ == 0 || counts_[0] > 0) return 0;
  return lowest_equivalent(min_non_zero_value_);
}

int64_t Histogram::max() const { return max_value_ == 0 ? 0 : highest_equivalent(max_value_); }

int64_t Histogram::value_at_percentile(double p) const {
  double q = std::min(std::max(std::nextafter(p, -INFINITY), 0.0), 100.0);
  double fp_count = (q / 100.0) * static_cast<double>(total_);
  int64_t need = std::max<int64_t>(static_cast<int64_t>(std::ceil(fp_count)), 1);
  if (total_ == 0) return 0;
  int64_t cum = 0;
  for (size_t i = min_index_; i <= max_index_; ++i) {
    cum += counts_[i];
    if (cum >= need) {
      int64_t v = value_from_index(i);
      return p == 0.0 ? lowest_equivalent(v) : highest_equivalent(v);
    }
  }
  return 0;
}

std::vector<int64_t> Histogram::values_at_percentiles(const std::vector<double>& ps,
                                                      double* mean_out) const {
  std::vector<int64_t> out(ps.size(), 0);
  if (mean_out) *mean_out = 0.0;
  if (total_ == 0) return out;
  std::vector<int64_t> need(ps.size());
  for (size_t k = 0; k < ps.size(); ++k) {
    double q = std::min(std::max(std::nextafter(ps[k], -INFINITY), 0.0), 100.0);
    need[k] = std::max<int64_t>(
        static_cast<int64_t>(std::ceil((q / 100.0) * static_cast<double>(total_))), 1);
  }
  size_t next = 0;
  int64_t cum = 0;
  double sum = 0;
  for (size_t i = min_index_; i <= max_index_; ++i) {
    if (counts_[i] == 0) continue;
    cum += counts_[i];
    int64_t v = value_from_index(i);
    sum += static_cast<double>(median_equivalent(v)) * static_cast<double>(counts_[i]);
    while (next < ps.size() && cum >= need[next]) {
      out[next] = ps[next] == 0.0 ? lowest_equivalent(v) : highest_equivalent(v);
      ++next;
    }
  }
  if (mean_out) *mean_out = sum / static_cast<double>(total_);
  return out;
}

std::map<double, int64_t> Histogram::percentile_map(int ticks) const {
  std::map<double, int64_t> out;
  if (total_ == 0) return out;
  double level = 0.0;
  int64_t cum = 0;
  const double total = static_cast<double>(total_);
  for (size_t i = min_index_; i <= max_index_; ++i) {
    if (counts_[i] == 0) continue;
    cum += counts_[i];
    double pct = (100.0 * static_cast<double>(cum)) / total;
    int64_t value = highest_equivalent(value_from_index(i));
    if (cum == total_) {
      // Last bucket: the iterator emits it once if its level is reached, then the final
      // forced step to 100% with the same bucket.
      if (pct >= level) out[pct] = value;
      out[100.0] = value;
      break;
    }
    // The same bucket emits once per iteration level it reaches (keys collapse in the map).
    while (pct >= level) {
      out[pct] = value;
      double ratio = std::log(100.0 / (100.0 - level)) / std::log(2);
      if (!std::isfinite(ratio) || ratio > 62) break;  // level ~100: cannot happen below total
      int64_t reporting_ticks = static_cast<int64_t>(ticks) *
                                static_cast<int64_t>(std::pow(2, static_cast<int64_t>(ratio) + 1));
      level += 100.0 / static_cast<double>(reporting_ticks);
    }
  }
  return out;
}

}  // namespace shale::perf
