#include "sim/network/maxmin.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace podsim::sim::internal {

namespace {
// Relative difference below which a fair share equals the current level.
constexpr double kSameLevel = 1e-12;
}  // namespace

MaxMinFiller::MaxMinFiller(int32_t num_links)
    : link_epoch_(static_cast<size_t>(num_links), 0),
      saturated_(static_cast<size_t>(num_links), 0),
      weight_(static_cast<size_t>(num_links), 0),
      cap_(static_cast<size_t>(num_links), 0.0),
      csr_begin_(static_cast<size_t>(num_links), 0),
      csr_end_(static_cast<size_t>(num_links), 0) {}

void MaxMinFiller::Freeze(int32_t c, ClassPaths paths, double level, std::vector<double>& used, double* rate,
                          PodVector<int32_t>& order) {
  const int32_t* record = paths.data + paths.begin[c];
  const int32_t w = record[0];
  const int32_t n = record[1];
  const double given = w * level;
  rate[c] = level;
  order.push_back(c);
  for (int32_t i = 0; i < n; ++i) {
    const size_t l = static_cast<size_t>(record[2 + i]);
    cap_[l] -= given;
    weight_[l] -= w;
    used[l] += given;
  }
}

void MaxMinFiller::Fill(const PodVector<int32_t>& classes, ClassPaths paths, const std::vector<double>& capacity,
                        std::vector<double>& used, double base_level, double* rate, PodVector<int32_t>& order) {
  ++stats_.fills;
  if (++epoch_ == 0) {  // wrapped after 2^32 fills: forget every old stamp
    std::fill(link_epoch_.begin(), link_epoch_.end(), 0);
    std::fill(class_epoch_.begin(), class_epoch_.end(), 0);
    epoch_ = 1;
  }
  touched_.clear();
  for (int32_t c : classes) {
    const int32_t* record = paths.data + paths.begin[c];
    for (int32_t i = 0; i < record[1]; ++i) {
      const int32_t link = record[2 + i];
      const size_t l = static_cast<size_t>(link);
      if (link_epoch_[l] != epoch_) {
        link_epoch_[l] = epoch_;
        touched_.push_back(link);
        weight_[l] = 0;
      }
      weight_[l] += record[0];
    }
  }
  for (int32_t link : touched_) {
    const size_t l = static_cast<size_t>(link);
    cap_[l] = std::max(0.0, capacity[l] - used[l]);
  }

  double level = base_level;
  unfrozen_.assign(classes.begin(), classes.end());
  while (!unfrozen_.empty()) {
    double min_share = std::numeric_limits<double>::infinity();
    for (int32_t link : touched_) {
      const size_t l = static_cast<size_t>(link);
      if (weight_[l] > 0) min_share = std::min(min_share, cap_[l] / static_cast<double>(weight_[l]));
    }
    if (min_share > level * (1 + kSameLevel)) level = min_share;
    if (++round_ == 0) {
      std::fill(saturated_.begin(), saturated_.end(), 0);
      round_ = 1;
    }
    ++stats_.rounds;
    const double limit = level * (1 + kSameLevel);
    for (int32_t link : touched_) {
      const size_t l = static_cast<size_t>(link);
      if (weight_[l] > 0 && cap_[l] / static_cast<double>(weight_[l]) <= limit) saturated_[l] = round_;
    }
    next_.clear();
    for (int32_t c : unfrozen_) {
      const int32_t* record = paths.data + paths.begin[c];
      bool hit = false;
      for (int32_t i = 0; i < record[1] && !hit; ++i) hit = saturated_[static_cast<size_t>(record[2 + i])] == round_;
      if (hit) Freeze(c, paths, level, used, rate, order);
      else next_.push_back(c);
    }
    const size_t frozen = unfrozen_.size() - next_.size();
    unfrozen_.swap(next_);
    if (!unfrozen_.empty() && frozen * 3 < unfrozen_.size()) {
      // Less than a quarter froze: many distinct levels ahead; one link at a time is cheaper.
      HeapFill(paths, used, level, rate, order);
      ++stats_.heap_fills;
      break;
    }
  }
}

void MaxMinFiller::HeapFill(ClassPaths paths, std::vector<double>& used, double level, double* rate,
                            PodVector<int32_t>& order) {
  const int32_t max_class = unfrozen_.back();  // ascending
  if (class_epoch_.size() <= static_cast<size_t>(max_class)) class_epoch_.resize(static_cast<size_t>(max_class) + 1, 0);
  // Link -> unfrozen classes (CSR): count, offsets, fill.
  for (int32_t link : touched_) csr_end_[static_cast<size_t>(link)] = 0;
  int64_t entries = 0;
  for (int32_t c : unfrozen_) {
    const int32_t* record = paths.data + paths.begin[c];
    for (int32_t i = 0; i < record[1]; ++i) ++csr_end_[static_cast<size_t>(record[2 + i])];
    entries += record[1];
  }
  int64_t offset = 0;
  heap_.clear();
  for (int32_t link : touched_) {
    const size_t l = static_cast<size_t>(link);
    const int64_t count = csr_end_[l];
    csr_begin_[l] = csr_end_[l] = offset;
    offset += count;
    if (weight_[l] > 0) heap_.push_back(ShareEntry{cap_[l] / static_cast<double>(weight_[l]), link});
  }
  csr_.resize(static_cast<size_t>(entries));
  for (int32_t c : unfrozen_) {
    const int32_t* record = paths.data + paths.begin[c];
    for (int32_t i = 0; i < record[1]; ++i) csr_[static_cast<size_t>(csr_end_[static_cast<size_t>(record[2 + i])]++)] = c;
  }
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const ShareEntry top = heap_.back();
    heap_.pop_back();
    const size_t l = static_cast<size_t>(top.link);
    if (weight_[l] == 0) continue;  // all its flows froze at other links
    const double share = cap_[l] / static_cast<double>(weight_[l]);
    if (share != top.share) {
      heap_.push_back(ShareEntry{share, top.link});
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      continue;
    }
    if (share > level * (1 + kSameLevel)) level = share;
    for (int64_t e = csr_begin_[l]; e < csr_end_[l]; ++e) {
      const int32_t c = csr_[static_cast<size_t>(e)];
      if (class_epoch_[static_cast<size_t>(c)] == epoch_) continue;
      class_epoch_[static_cast<size_t>(c)] = epoch_;
      Freeze(c, paths, level, used, rate, order);
    }
  }
  unfrozen_.clear();
}

}  // namespace podsim::sim::internal
