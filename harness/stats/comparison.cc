#include "harness/stats/comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "harness/record/record.h"
#include "harness/stats/paired_stats.h"

namespace loadbench {

using Json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();

Condition ConditionOf(const Json& r) {
  return {r.value("file", ""), r.value("cache", ""), r.value("procs", 1),
          r.value("memory_limit_bytes", uint64_t{0}), r.value("pattern", "replicated")};
}

std::string ConditionText(const Condition& c, bool with_file) {
  const auto& [file, cache, procs, limit, pattern] = c;
  std::string out = cache;
  if (procs > 1) out += fmt::format(" x{} procs", procs);
  if (pattern != "replicated") out += " " + pattern;
  if (limit > 0) out += fmt::format(" limit {} MiB", limit >> 20);
  if (with_file) out += " " + file.substr(file.find_last_of('/') + 1);
  return out;
}

bool IsOk(const Json& r) { return r.value("status", "") == "ok"; }

double WallOf(const Json& r) {
  const auto it = r.find("wall_s");
  return it != r.end() && it->is_number() ? it->get<double>() : 0.0;
}

Rounds RoundsOf(const std::vector<Json>& records) {
  Rounds out;
  for (const Json& r : records) {
    if (!IsOk(r) || r.value("strategy", "") == kCeiling || WallOf(r) <= 0) continue;
    // Runs made outside rounds (grouped order) share no round with anything: never paired.
    if (!r.contains("position")) continue;
    double& t = out[ConditionOf(r)][r.value("strategy_spec", "")][r.value("rep", 0)];
    t = std::max(t, WallOf(r));
  }
  return out;
}

RoundsVerdict CompareWithBaseline(const std::vector<Json>& records, const std::string& baseline,
                                  double target) {
  RoundsVerdict v;
  for (const auto& [condition, specs] : RoundsOf(records)) {
    for (const auto& [spec, rounds] : specs) {
      v.rounds = std::max(v.rounds, static_cast<int>(rounds.size()));
    }
    const auto base = specs.find(baseline);
    for (const auto& [spec, rounds] : specs) {
      if (spec == baseline) continue;
      std::vector<double> d;
      if (base != specs.end()) {
        for (const auto& [rep, t] : rounds) {
          const auto b = base->second.find(rep);
          if (b != base->second.end()) d.push_back(std::log(t / b->second));
        }
      }
      const paired::Interval i = paired::SignedRankInterval(d);
      Comparison c;
      std::tie(c.file, c.cache, c.procs, c.memory_limit_bytes, c.pattern) = condition;
      c.spec = spec;
      c.baseline = baseline;
      c.n = i.n;
      c.ratio = i.n > 0 ? std::exp(i.estimate) : 0;
      c.low = i.bounded ? std::exp(i.low) : 0;
      c.high = i.bounded ? std::exp(i.high) : kInf;
      c.half_width = paired::HalfWidth(i);
      c.met = c.half_width <= target;
      c.significant = paired::Significant(i);
      v.comparisons.push_back(c);
    }
  }
  v.met = !v.comparisons.empty() && std::all_of(v.comparisons.begin(), v.comparisons.end(),
                                                [](const Comparison& c) { return c.met; });
  return v;
}

}  // namespace loadbench
