#include "harness/stats/noise.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/record/record.h"
#include "harness/stats/comparison.h"
#include "harness/stats/paired_stats.h"
#include "harness/stats/ratio_text.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The paired comparisons with the baseline, one line each; those with too few rounds for an
// interval share one line, which says how many rounds would give one.
std::string PairedLines(const std::vector<Json>& records, const std::string& baseline,
                        bool many_files) {
  const RoundsVerdict v = CompareWithBaseline(records, baseline, 0);
  std::string lines;
  int too_few = 0, most = 0;
  for (const Comparison& c : v.comparisons) {
    const std::string cond = ConditionText(
        {c.file, c.cache, c.procs, c.memory_limit_bytes, c.pattern, c.link, c.storage}, many_files);
    const std::string spec = MarkedSpec(c);
    if (c.n == 0) {
      lines += fmt::format("  {:<5} {}: no rounds shared with {}\n", cond, spec, baseline);
    } else if (c.half_width == kInf) {
      ++too_few;
      most = std::max(most, c.n);
    } else {
      lines +=
          fmt::format("  {:<5} {}: {}, {} interval, {} rounds, {}\n", cond, spec,
                      RatioText(c.ratio, c.low, c.high), LevelText(c.level), c.n,
                      c.significant ? (c.ratio < 1 ? "faster" : "slower") : "no difference shown");
    }
  }
  std::string out;
  if (!lines.empty()) {
    out = fmt::format("paired, time over {}'s in the same round (exact signed-rank interval, at "
                      "least 95%; below 1: faster):\n{}",
                      baseline, lines);
  }
  if (too_few > 0) {
    out += fmt::format("paired with {}: {} {} too few for a 95% interval ({} of the ratios); 6 "
                       "rounds give one (--reps 6)\n",
                       baseline, most, most == 1 ? "round is" : "rounds are", too_few);
  }
  return out;
}

// A WARNING line when `y`, in the records' order, trends (Kendall, p < 0.05, 6 points or more).
std::string TrendLine(const std::string& what, const std::vector<double>& y,
                      const std::string& unit) {
  const paired::Trend t = paired::KendallTrend(y);
  if (t.n < 6 || !(t.p < 0.05)) return "";
  const size_t third = std::max<size_t>(1, y.size() / 3);
  const double first = paired::Median({y.begin(), y.begin() + static_cast<ptrdiff_t>(third)});
  const double last = paired::Median({y.end() - static_cast<ptrdiff_t>(third), y.end()});
  return fmt::format("WARNING drift: {} moved from {:.3g}{} (first third) to {:.3g}{} (last "
                     "third) over {} rounds (Kendall tau {:.2f}, p {:.3f}); compare within "
                     "rounds, not across the experiment\n",
                     what, first, unit, last, unit, t.n, t.tau, t.p);
}

// Drift: of the ceiling per file; in conditions without a ceiling (warm ones, or none asked
// for), of every strategy together.
std::string DriftLines(const std::vector<Json>& records, const Rounds& rounds, bool many_files) {
  std::string out;
  std::map<std::string, std::vector<double>> ceilings;
  for (const Json& r : records) {
    if (r.value("strategy", "") != kCeiling || !IsOk(r)) continue;
    const auto g = r.find("gb_per_s");
    if (g != r.end() && g->is_number()) ceilings[r.value("file", "")].push_back(g->get<double>());
  }
  for (const auto& [file, y] : ceilings) {
    out += TrendLine(many_files ? "the ceiling of " + file : "the ceiling (device read speed)", y,
                     " GB/s");
  }
  for (const auto& [cond, specs] : rounds) {
    // A condition the ceiling measured (cold, its file) is judged by it.
    if (std::get<1>(cond) == "cold" && ceilings.count(std::get<0>(cond))) continue;
    // Each round's time of every strategy over that strategy's median, the median of those.
    std::map<int, std::vector<double>> per_round;
    for (const auto& [spec, times] : specs) {
      std::vector<double> all;
      for (const auto& [rep, t] : times) all.push_back(t);
      const double med = paired::Median(all);
      for (const auto& [rep, t] : times) per_round[rep].push_back(t / med);
    }
    std::vector<double> y;
    for (auto& [rep, f] : per_round) y.push_back(paired::Median(f));
    out += TrendLine("every strategy together (" + ConditionText(cond, many_files) + ")", y,
                     "x its median");
  }
  return out;
}

// A cold condition's ceiling reads: each round's GB/s, and the recipes they used.
struct RoundCeilings {
  std::map<int, double> gb_per_s;
  std::set<std::string> recipes;
};

std::map<Condition, RoundCeilings> CeilingsByRound(const std::vector<Json>& records) {
  std::map<Condition, RoundCeilings> out;
  for (const Json& r : records) {
    const auto g = r.find("gb_per_s");
    if (r.value("strategy", "") != kCeiling || !IsOk(r) || g == r.end() || !g->is_number()) {
      continue;
    }
    RoundCeilings& c = out[ConditionOf(r)];
    c.gb_per_s[r.value("rep", 0)] = g->get<double>();
    const auto p = r.find("params");
    const bool named = p != r.end() && p->is_object() && p->contains("recipe");
    c.recipes.insert(named ? p->value("recipe", "?") : "O_DIRECT io_uring (before recipes)");
  }
  return out;
}

// A ceiling that is not one: a series whose median GB/s over the rounds it shares with ceiling
// reads is above the fastest of those reads beat the ceiling by more than the ceiling's own
// spread. Said as the report says it (analysis/ceiling.py), one WARNING line each.
std::string BeatenCeilingLines(const std::vector<Json>& records, const Rounds& rounds,
                               bool many_files) {
  const std::map<Condition, RoundCeilings> ceilings = CeilingsByRound(records);
  std::map<Condition, double> bytes;
  for (const Json& r : records) {
    const auto b = r.find("file_bytes");
    if (!IsCeilingName(r.value("strategy", "")) && b != r.end() && b->is_number()) {
      bytes[ConditionOf(r)] = b->get<double>();
    }
  }
  std::string out;
  for (const auto& [cond, series] : rounds) {
    const auto c = ceilings.find(cond);
    if (c == ceilings.end() || !bytes.count(cond)) continue;
    for (const auto& [name, times] : series) {
      std::vector<double> gbps;
      double fastest = 0;
      for (const auto& [rep, t] : times) {
        const auto read = c->second.gb_per_s.find(rep);
        if (read == c->second.gb_per_s.end() || t <= 0) continue;
        gbps.push_back(bytes.at(cond) / t / 1e9);
        fastest = std::max(fastest, read->second);
      }
      if (gbps.empty() || paired::Median(gbps) <= fastest) continue;
      out += fmt::format(
          "WARNING a ceiling that is not one: {} {}{}'s median {:.2f} GB/s over {} rounds is above "
          "the fastest ceiling read of those rounds ({:.2f} GB/s, {}): the ceiling is not the "
          "device's limit here, and shares of it (of device) overstate how near the strategies "
          "come to the limit\n",
          ConditionText(cond, many_files), name.first,
          name.second.empty() ? "" : "[" + name.second + "]", paired::Median(gbps), gbps.size(),
          fastest, fmt::join(c->second.recipes, ", "));
    }
  }
  return out;
}

// Outliers, per group (condition and strategy), on log time: flagged, kept in every figure;
// listed when `list`, else counted.
std::string OutlierLines(const std::vector<Json>& records, bool many_files, bool list) {
  std::map<std::pair<Condition, std::string>, std::vector<const Json*>> groups;
  for (const Json& r : records) {
    if (!IsOk(r) || WallOf(r) <= 0) continue;
    const std::string role = RoleOf(r);
    groups[{ConditionOf(r), r.value("strategy_spec", "") + (role.empty() ? "" : "[" + role + "]")}]
        .push_back(&r);
  }
  std::vector<std::string> lines;
  for (const auto& [key, rs] : groups) {
    std::vector<double> x, wall;
    for (const Json* r : rs) {
      wall.push_back(WallOf(*r));
      x.push_back(std::log(wall.back()));
    }
    const std::vector<bool> flags = paired::MadOutliers(x);
    // The median time, as the report gives it (of an even count, the mean of the middle two).
    const double med = paired::Median(wall);
    for (size_t i = 0; i < rs.size(); ++i) {
      if (!flags[i]) continue;
      lines.push_back(fmt::format("  {} {} rep {}: {:.3f} s, the group's median {:.3f} s ({})",
                                  ConditionText(key.first, many_files), key.second,
                                  rs[i]->value("rep", 0), WallOf(*rs[i]), med,
                                  rs[i]->value("run_id", "")));
    }
  }
  if (lines.empty()) return "";
  std::string out = fmt::format("outliers (MAD rule, kept in every figure): {}{}\n", lines.size(),
                                list ? "" : " (listed by --verbose and in the report)");
  if (!list) return out;
  for (size_t i = 0; i < lines.size() && i < 10; ++i) out += lines[i] + "\n";
  if (lines.size() > 10) out += fmt::format("  ... and {} more\n", lines.size() - 10);
  return out;
}

// The runs of several readers that have no time in their round, and so no paired ratio.
std::string BrokenLines(const std::vector<Json>& records, bool many_files) {
  const std::vector<std::string> broken = BrokenRuns(records, many_files);
  if (broken.empty()) return "";
  std::string out = fmt::format("not paired: {} {} of several readers had a reader without a "
                                "time (a run counts only whole):\n",
                                broken.size(), broken.size() == 1 ? "run" : "runs");
  for (size_t i = 0; i < broken.size() && i < 5; ++i) out += "  " + broken[i] + "\n";
  if (broken.size() > 5) out += fmt::format("  ... and {} more\n", broken.size() - 5);
  return out;
}

}  // namespace

std::string NoiseSummary(const std::vector<Json>& records, const std::string& baseline,
                         bool list_outliers) {
  const Rounds rounds = RoundsOf(records);
  std::map<std::string, bool> files;
  for (const auto& [c, specs] : rounds) files[std::get<0>(c)] = true;
  const bool many_files = files.size() > 1;
  return PairedLines(records, baseline, many_files) + BrokenLines(records, many_files) +
         BeatenCeilingLines(records, rounds, many_files) + DriftLines(records, rounds, many_files) +
         OutlierLines(records, many_files, list_outliers);
}

}  // namespace loadbench
