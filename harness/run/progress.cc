#include "harness/run/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace loadbench {

std::string DurationText(double s) {
  s = std::round(s);  // 179.6 s is "3 min 00 s", not "2 min 60 s"
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600),
                     std::floor(std::fmod(s, 3600) / 60));
}

Progress::Progress(bool on) : on_(on && ::isatty(2) == 1) {}

void Progress::Show(const std::string& text) {
  if (on_) fmt::print(stderr, "\r\033[K{}", text);
}

void Progress::Clear() {
  if (on_) fmt::print(stderr, "\r\033[K");
}

void Eta::Done(size_t i, double actual) {
  auto& [sum, n] = measured_[{items_[i].strategy, items_[i].condition}];
  sum += actual;
  ++n;
  est_done_ += items_[i].estimate;
  actual_done_ += actual;
  ++runs_;
}

double Eta::Mean(const Key& k) const {
  const auto& [sum, n] = measured_.at(k);
  return sum / n;
}

// The item's strategy measured in another condition, scaled by the two conditions' ratio over
// the strategies measured in both, shrunk towards 1 (no scaling) as if 1 were one strategy more:
// with n pairs the ratio weighs n / (n + 1). Before three pairs a ratio above 1 counts as 1: the
// first warm run of a round also pays for warming the file, and one such pair alone tripled the
// estimate at a tenth of `make run`. Replayed on this machine's quick runs, the estimate at a
// tenth came to 1.06-1.27x the rest, against 1.29-1.52x with no scaling before three pairs.
std::optional<double> Eta::FromOtherCondition(const Item& item) const {
  const auto first = measured_.lower_bound({item.strategy, ""});
  if (first == measured_.end() || first->first.first != item.strategy) return std::nullopt;
  const std::string& other = first->first.second;
  double here = 0, there = 0;
  int pairs = 0;
  for (const auto& [key, m] : measured_) {
    if (key.second != other || !measured_.count({key.first, item.condition})) continue;
    here += Mean({key.first, item.condition});
    there += Mean(key);
    ++pairs;
  }
  double ratio = there > 0 ? here / there : 1;
  if (pairs < 3) ratio = std::min(ratio, 1.0);
  const double weight = pairs / (pairs + 1.0);
  return Mean(first->first) * (weight * ratio + 1 - weight);
}

std::optional<double> Eta::Seconds(size_t next) const {
  const double ratio = est_done_ > 0 ? actual_done_ / est_done_ : 1;
  double left = 0;
  bool any_estimate = runs_ > 0;
  for (size_t i = next; i < items_.size(); ++i) {
    const Item& item = items_[i];
    if (measured_.count({item.strategy, item.condition})) {
      left += Mean({item.strategy, item.condition});
    } else if (const auto other = FromOtherCondition(item)) {
      left += *other;
    } else if (item.estimate > 0) {
      left += item.estimate * ratio;
      any_estimate = true;
    } else if (runs_ > 0) {
      left += actual_done_ / runs_;
    }
  }
  if (!any_estimate) return std::nullopt;
  return left;
}

std::string Eta::Left(size_t next) const {
  const std::optional<double> left = Seconds(next);
  if (!left) return "unknown";
  return runs_ == 0 ? "~" + DurationText(*left) + " (estimate)" : DurationText(*left);
}

}  // namespace loadbench
