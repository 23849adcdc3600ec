// Each thread's time over a profile's window, and the record's figures from them
// (harness/profile/profile.h).
#include <algorithm>
#include <limits>

#include "harness/profile/profile.h"

namespace loadbench {
namespace {

// The length of [from, to] within the window.
double Overlap(const Window& w, double from, double to) {
  double s = 0;
  for (const auto& [begin, end] : w) s += std::max(0.0, std::min(end, to) - std::max(begin, from));
  return s;
}

double Length(const Window& w) {
  return Overlap(w, -std::numeric_limits<double>::infinity(),
                 std::numeric_limits<double>::infinity());
}

}  // namespace

std::vector<ThreadTime> ThreadTimes(const FoldedProfile& p, const Window& window) {
  std::map<int64_t, ThreadSeen> threads = p.threads;
  if (p.pid > 0) threads[p.pid];    // the main thread runs the load, sampled or not
  if (threads.empty()) threads[0];  // perf saw nothing at all: still the thread that loaded
  std::vector<ThreadTime> out;
  for (const auto& [tid, t] : threads) {
    const double in = Overlap(window, t.started.value_or(-std::numeric_limits<double>::infinity()),
                              t.exited.value_or(std::numeric_limits<double>::infinity()));
    if (in <= 0 && t.samples == 0) continue;  // lived before or after the window only
    const double on = static_cast<double>(t.period_ns) / 1e9;
    out.push_back({tid, t.name, in, on, std::max(0.0, in - on)});
  }
  return out;
}

nlohmann::ordered_json ProfileFigures(const FoldedProfile& p, const std::optional<Window>& window) {
  nlohmann::ordered_json per_thread = nlohmann::ordered_json::array();
  nlohmann::ordered_json j;
  if (!window) {
    for (const auto& [tid, t] : p.threads) {
      if (t.samples == 0) continue;
      per_thread.push_back({{"tid", tid},
                            {"name", t.name},
                            {"in_window_s", nullptr},
                            {"on_cpu_s", static_cast<double>(t.period_ns) / 1e9},
                            {"waiting_s", nullptr}});
    }
    j = {{"window_s", nullptr},
         {"threads", per_thread.size()},
         {"shares_of", "cpu"},
         {"waiting_s", nullptr}};
  } else {
    double waiting = 0;
    for (const ThreadTime& t : ThreadTimes(p, *window)) {
      waiting += t.waiting_s;
      per_thread.push_back({{"tid", t.tid},
                            {"name", t.name},
                            {"in_window_s", t.in_window_s},
                            {"on_cpu_s", t.on_cpu_s},
                            {"waiting_s", t.waiting_s}});
    }
    j = {{"window_s", Length(*window)},
         {"threads", per_thread.size()},
         {"shares_of", per_thread.size() > 1 ? "cpu" : "wall"},
         {"waiting_s", waiting}};
  }
  j["per_thread"] = per_thread;
  return j;
}

}  // namespace loadbench
