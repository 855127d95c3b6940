// The flow network's connected components: max-min fair rates decompose over the components
// of the graph of classes and the links they cross, so a start or an end refills only its own
// (see flow_network.h). The link -> class index they are found through is kept here too.

#include <algorithm>
#include <cstdint>

#include "sim/network/flow_clock.h"
#include "sim/network/flow_network_impl.h"

namespace podsim::sim {

void FlowNetwork::Impl::IndexClass(int32_t c) {
  const int32_t* links = Links(c);
  for (int32_t i = 0; i < NumLinks(c); ++i) link_classes_[static_cast<size_t>(links[i])].push_back(c);
}

bool FlowNetwork::Impl::CollectComponent(const PodVector<int32_t>& seeds, double lowest, size_t limit) {
  const double cut = lowest * (1 - internal::kLevelTolerance);
  if (class_mark_.size() < classes_.size()) class_mark_.resize(classes_.size(), 0);
  if (++mark_ == 0) {  // wrapped: forget every old mark
    std::fill(class_mark_.begin(), class_mark_.end(), 0);
    std::fill(link_mark_.begin(), link_mark_.end(), 0);
    mark_ = 1;
  }
  component_.clear();
  component_links_.clear();
  link_stack_.clear();
  const auto visit_links = [&](int32_t c) {
    const int32_t* links = Links(c);
    for (int32_t i = 0; i < NumLinks(c); ++i) {
      const size_t l = static_cast<size_t>(links[i]);
      if (link_mark_[l] != mark_) {
        link_mark_[l] = mark_;
        link_stack_.push_back(links[i]);
        component_links_.push_back(links[i]);
      }
    }
  };
  for (int32_t c : seeds) visit_links(c);
  while (!link_stack_.empty()) {
    PodVector<int32_t>& list = link_classes_[static_cast<size_t>(link_stack_.back())];
    link_stack_.resize(link_stack_.size() - 1);
    size_t kept = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      const int32_t c = list[i];
      if (!classes_[static_cast<size_t>(c)].active) continue;  // finished: pruned
      list[kept++] = c;
      if (class_mark_[static_cast<size_t>(c)] == mark_ || rate_[static_cast<size_t>(c)] < cut) continue;
      class_mark_[static_cast<size_t>(c)] = mark_;
      component_.push_back(c);
      if (component_.size() > limit) {
        for (size_t j = i + 1; j < list.size(); ++j) list[kept++] = list[j];
        list.resize(kept);
        return false;
      }
      visit_links(c);
    }
    list.resize(kept);
  }
  return true;
}

bool FlowNetwork::Impl::RefillComponent(int64_t t) {
  // Seeds: the new classes and the ones that just ended. Any rate in their component may change.
  seeds_.clear();
  for (size_t c = batch_first_class_; c < classes_.size(); ++c) seeds_.push_back(static_cast<int32_t>(c));
  seeds_.append(finished_.begin(), finished_.end());
  const size_t limit = static_cast<size_t>(active_classes_) / 4;
  if (!CollectComponent(seeds_, 0.0, limit)) return false;
  ++stats_.component_fillings;
  fill_set_.assign(component_.begin(), component_.end());
  std::sort(fill_set_.begin(), fill_set_.end());
  Refill(t, /*all=*/false, 0.0, /*component=*/true);
  return true;
}

}  // namespace podsim::sim
