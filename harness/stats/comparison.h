// The paired comparison of every strategy with the baseline, from run records: per condition
// (file, cache, procs, memory limit), the within-round ratios of a strategy's time over the
// baseline's, and their signed-rank interval (harness/stats/paired_stats.h). What adaptive
// rounds stop on, and what the summary's paired lines say.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench {

// A condition: runs of it are comparable with each other (file, cache, procs, memory limit).
using Condition = std::tuple<std::string, std::string, int, uint64_t, std::string>;
Condition ConditionOf(const nlohmann::ordered_json& record);
// "cold", "warm x2 procs limit 512 MiB", with the file's name when `with_file`.
std::string ConditionText(const Condition& c, bool with_file);

bool IsOk(const nlohmann::ordered_json& record);
double WallOf(const nlohmann::ordered_json& record);  // 0 when there is none

// Per condition, per strategy spec, per round: the run's time (its slowest worker's), from the
// ok records made in rounds (those with a position; ceiling reads aside).
using Rounds = std::map<Condition, std::map<std::string, std::map<int, double>>>;
Rounds RoundsOf(const std::vector<nlohmann::ordered_json>& records);

// One strategy against the baseline in one condition (file, cache, procs, memory limit), over
// the rounds where both have an ok run. ratio: the strategy's time over the baseline's.
struct Comparison {
  std::string file, cache;
  int procs = 1;
  uint64_t memory_limit_bytes = 0;
  std::string pattern = "replicated";
  std::string spec, baseline;
  int n = 0;
  double ratio = 0, low = 0, high = 0;  // low/high: 0 and +inf when unbounded
  double half_width = 0;                // relative; +inf when unbounded
  bool met = false;                     // half_width <= target
  bool significant = false;
};

struct RoundsVerdict {
  int rounds = 0;    // the most rounds any condition has
  bool met = false;  // every comparison met the target (false when there is none)
  std::vector<Comparison> comparisons;
};

// Compares every strategy with `baseline` (a strategy spec text) in every condition of
// `records` (runs.jsonl objects; ceilings and other experiments' strategies aside).
RoundsVerdict CompareWithBaseline(const std::vector<nlohmann::ordered_json>& records,
                                  const std::string& baseline, double target);

}  // namespace loadbench
