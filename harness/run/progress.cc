#include "harness/run/progress.h"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

namespace loadbench {

std::string DurationText(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::fmod(s, 3600) / 60);
}

Progress::Progress(bool on) : on_(on && ::isatty(2) == 1) {}

void Progress::Show(const std::string& text) {
  if (on_) fmt::print(stderr, "\r\033[K{}", text);
}

void Progress::Clear() {
  if (on_) fmt::print(stderr, "\r\033[K");
}

void Eta::Done(size_t i, double actual) {
  auto& [sum, n] = measured_[items_[i].combination];
  sum += actual;
  ++n;
  est_done_ += items_[i].estimate;
  actual_done_ += actual;
  ++runs_;
}

std::string Eta::Left(size_t next) const {
  const double ratio = est_done_ > 0 ? actual_done_ / est_done_ : 1;
  double left = 0;
  bool any_estimate = runs_ > 0;
  for (size_t i = next; i < items_.size(); ++i) {
    const auto m = measured_.find(items_[i].combination);
    if (m != measured_.end()) {
      left += m->second.first / m->second.second;
    } else if (items_[i].estimate > 0) {
      left += items_[i].estimate * ratio;
      any_estimate = true;
    } else if (runs_ > 0) {
      left += actual_done_ / runs_;
    }
  }
  if (!any_estimate) return "unknown";
  return runs_ == 0 ? "~" + DurationText(left) + " (estimate)" : DurationText(left);
}

}  // namespace loadbench
