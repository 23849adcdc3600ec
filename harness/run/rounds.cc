#include "harness/run/rounds.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <tuple>

#include <fmt/format.h>

#include "harness/stats/paired_stats.h"
#include "harness/run/session.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A condition: runs of it are comparable with each other.
using Condition = std::tuple<std::string, std::string, int, uint64_t>;  // file, cache, procs, limit

Condition ConditionOf(const Json& r) {
  return {r.value("file", ""), r.value("cache", ""), r.value("procs", 1),
          r.value("memory_limit_bytes", uint64_t{0})};
}

std::string ConditionText(const Condition& c, bool with_file) {
  const auto& [file, cache, procs, limit] = c;
  std::string out = cache;
  if (procs > 1) out += fmt::format(" x{} procs", procs);
  if (limit > 0) out += fmt::format(" limit {} MiB", limit >> 20);
  if (with_file) out += " " + file.substr(file.find_last_of('/') + 1);
  return out;
}

bool IsOk(const Json& r) { return r.value("status", "") == "ok"; }

double Wall(const Json& r) {
  const auto it = r.find("wall_s");
  return it != r.end() && it->is_number() ? it->get<double>() : 0.0;
}

// Per condition, per strategy spec, per round: the run's time (its slowest worker's).
using Rounds = std::map<Condition, std::map<std::string, std::map<int, double>>>;

Rounds RoundsOf(const std::vector<Json>& records) {
  Rounds out;
  for (const Json& r : records) {
    if (!IsOk(r) || r.value("strategy", "") == kCeiling || Wall(r) <= 0) continue;
    double& t = out[ConditionOf(r)][r.value("strategy_spec", "")][r.value("rep", 0)];
    t = std::max(t, Wall(r));
  }
  return out;
}

std::string Figure(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "inf"; }

}  // namespace

Status ParseRoundOrder(const std::string& text, RoundOrder* out) {
  if (text == "interleaved") {
    *out = RoundOrder::kInterleaved;
  } else if (text == "shuffled") {
    *out = RoundOrder::kShuffled;
  } else if (text == "grouped") {
    *out = RoundOrder::kGrouped;
  } else {
    return Status::BadInput(
        fmt::format("order '{}' is not interleaved, shuffled or grouped", text));
  }
  return Status::Ok();
}

const char* RoundOrderName(RoundOrder order) {
  switch (order) {
    case RoundOrder::kInterleaved: return "interleaved";
    case RoundOrder::kShuffled: return "shuffled";
    case RoundOrder::kGrouped: return "grouped";
  }
  return "?";
}

std::vector<size_t> MembersInOrder(size_t n, int round, RoundOrder order, uint64_t seed) {
  std::vector<size_t> out(n);
  std::iota(out.begin(), out.end(), size_t{0});
  if (n == 0) return out;
  if (order == RoundOrder::kShuffled) {
    // A stream of its own per round: round r's order does not depend on how many were drawn
    // before it.
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(round)};
    std::mt19937_64 rng(seq);
    for (size_t i = n - 1; i > 0; --i) {
      std::swap(out[i], out[std::uniform_int_distribution<size_t>(0, i)(rng)]);
    }
  } else if (order == RoundOrder::kInterleaved) {
    std::rotate(out.begin(), out.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(round) % n),
                out.end());
  }
  return out;
}

Json AutoReps::ToJson() const {
  return {{"target", target}, {"min_rounds", min_rounds}, {"max_rounds", max_rounds},
          {"budget_s", budget_s}};
}

Status ParseTarget(const std::string& text, const char* what, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && std::string(end) == "%") {
    v /= 100;
  } else if (end == text.c_str() || *end != '\0') {
    return Status::BadInput(
        fmt::format("{}: '{}' is not a fraction (0.1) or a percentage (10%)", what, text));
  }
  *out = v;
  return Status::Ok();
}

Status ParseDuration(const std::string& text, const char* what, double* seconds) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit = end ? end : "";
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  if (unit == "min" || unit == "m") scale = 60;
  if (unit == "h") scale = 3600;
  if (end == text.c_str() || scale == 0 || !(v >= 0)) {
    return Status::BadInput(fmt::format(
        "{}: '{}' is not a duration (seconds, or with s, min or h: \"30min\")", what, text));
  }
  *seconds = v * scale;
  return Status::Ok();
}

Status CheckAutoReps(const AutoReps& a) {
  if (!(a.target > 0 && a.target < 1)) {
    return Status::BadInput(fmt::format("auto target {} must be above 0 and below 1 (0.1 is "
                                        "±10%)", a.target));
  }
  if (a.min_rounds < 1 || a.max_rounds < a.min_rounds || a.max_rounds > 10000) {
    return Status::BadInput(fmt::format(
        "auto rounds: min {} and max {} must satisfy 1 <= min <= max <= 10000", a.min_rounds,
        a.max_rounds));
  }
  if (!(a.budget_s >= 0)) return Status::BadInput("auto budget must not be negative");
  return Status::Ok();
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
      std::tie(c.file, c.cache, c.procs, c.memory_limit_bytes) = condition;
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
  v.met = !v.comparisons.empty() &&
          std::all_of(v.comparisons.begin(), v.comparisons.end(),
                      [](const Comparison& c) { return c.met; });
  return v;
}

std::string StopReason(const AutoReps& a, const RoundsVerdict& v, int rounds_done,
                       double elapsed_s, double round_s) {
  if (rounds_done >= a.min_rounds && v.met) return "target met";
  if (rounds_done >= a.max_rounds) return "max rounds";
  if (a.budget_s > 0 && elapsed_s + round_s > a.budget_s) return "budget";
  return "";
}

Json AdaptiveJson(const AutoReps& a, const RoundsVerdict& v, double elapsed_s,
                  const std::string& stopped) {
  Json j = a.ToJson();
  j["rounds"] = v.rounds;
  j["elapsed_s"] = elapsed_s;
  j["met"] = v.met;
  j["stopped"] = stopped;
  auto finite = [](double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); };
  j["comparisons"] = Json::array();
  for (const Comparison& c : v.comparisons) {
    j["comparisons"].push_back({{"file", c.file}, {"cache", c.cache}, {"procs", c.procs},
                                {"memory_limit_bytes", c.memory_limit_bytes},
                                {"strategy_spec", c.spec}, {"baseline", c.baseline},
                                {"n", c.n}, {"ratio", finite(c.ratio)},
                                {"low", c.high < kInf ? finite(c.low) : Json(nullptr)},
                                {"high", finite(c.high)}, {"half_width", finite(c.half_width)},
                                {"met", c.met}, {"significant", c.significant}});
  }
  return j;
}

Status RunAutoRounds(const AutoReps& a, const std::string& baseline, const RoundDriver& d,
                     std::string* stopped, RoundsVerdict* verdict) {
  const double t0 = d.now_s();
  double last_round_s = 0;
  // Also before the first round: a resumed experiment may have enough already.
  *verdict = CompareWithBaseline(d.records(), baseline, a.target);
  for (int round = 0;; ++round) {
    *stopped = StopReason(a, *verdict, round, d.now_s() - t0, last_round_s);
    if (!stopped->empty()) break;
    const double start = d.now_s();
    bool interrupted = false;
    LB_RETURN_IF_ERROR(d.run_round(round, &interrupted));
    *verdict = CompareWithBaseline(d.records(), baseline, a.target);
    if (interrupted) {
      *stopped = "interrupted";
      break;
    }
    last_round_s = d.now_s() - start;
    if (d.after_round) d.after_round(*verdict, "running");
  }
  if (d.after_round) d.after_round(*verdict, *stopped);
  return Status::Ok();
}

std::string AutoRepsLine(const AutoReps& a, const RoundsVerdict& v, const std::string& stopped) {
  const Comparison* widest = nullptr;
  for (const Comparison& c : v.comparisons) {
    if (widest == nullptr || c.half_width > widest->half_width) widest = &c;
  }
  std::string out = fmt::format("reps auto: {} rounds, stopped: {}; target ±{:.0f}% {}", v.rounds,
                                stopped, a.target * 100, v.met ? "met" : "NOT met");
  if (widest != nullptr) {
    out += std::isfinite(widest->half_width)
               ? fmt::format("; widest interval ±{:.1f}% ({} {})", widest->half_width * 100,
                             widest->cache, widest->spec)
               : fmt::format("; {} {} has too few rounds for an interval", widest->cache,
                             widest->spec);
  }
  return out + " (adaptive.json)\n";
}

std::string DefaultBaseline(const std::vector<std::string>& specs) {
  for (const std::string& s : specs) {
    if (s == "fread") return s;
  }
  return specs.empty() ? "" : specs.front();
}

std::string NoiseSummary(const std::vector<Json>& records, const std::string& baseline) {
  std::string out;
  const Rounds rounds = RoundsOf(records);
  std::map<std::string, bool> files;
  for (const auto& [c, specs] : rounds) files[std::get<0>(c)] = true;
  const bool many_files = files.size() > 1;

  // Paired comparisons with the baseline.
  const RoundsVerdict v = CompareWithBaseline(records, baseline, 0);
  if (!v.comparisons.empty()) {
    out += fmt::format("paired, time over {}'s in the same round (95% interval):\n", baseline);
    for (const Comparison& c : v.comparisons) {
      const Condition cond{c.file, c.cache, c.procs, c.memory_limit_bytes};
      if (c.n == 0) {
        out += fmt::format("  {:<5} {}: no rounds shared with {}\n",
                           ConditionText(cond, many_files), c.spec, baseline);
        continue;
      }
      if (c.half_width == kInf) {
        out += fmt::format("  {:<5} {}: {:.3f}x, {} rounds: too few for an interval (6)\n",
                           ConditionText(cond, many_files), c.spec, c.ratio, c.n);
        continue;
      }
      out += fmt::format("  {:<5} {}: {:.3f}x ({}-{}), {} rounds, {}\n",
                         ConditionText(cond, many_files), c.spec, c.ratio, Figure(c.low),
                         Figure(c.high), c.n,
                         c.significant ? (c.ratio < 1 ? "faster" : "slower")
                                       : "no difference shown");
    }
  }

  // Drift: the ceiling per file.
  std::map<std::string, std::vector<double>> ceilings;
  for (const Json& r : records) {
    if (r.value("strategy", "") != kCeiling || !IsOk(r)) continue;
    const auto g = r.find("gb_per_s");
    if (g != r.end() && g->is_number()) ceilings[r.value("file", "")].push_back(g->get<double>());
  }
  auto trend_line = [&](const std::string& what, const std::vector<double>& y,
                        const std::string& unit) {
    const paired::Trend t = paired::KendallTrend(y);
    if (t.n < 6 || !(t.p < 0.05)) return;
    const size_t third = std::max<size_t>(1, y.size() / 3);
    const double first = paired::Median({y.begin(), y.begin() + static_cast<ptrdiff_t>(third)});
    const double last = paired::Median({y.end() - static_cast<ptrdiff_t>(third), y.end()});
    out += fmt::format("WARNING drift: {} moved from {:.3g}{} (first third) to {:.3g}{} (last "
                       "third) over {} rounds (Kendall tau {:.2f}, p {:.3f}); compare within "
                       "rounds, not across the experiment\n",
                       what, first, unit, last, unit, t.n, t.tau, t.p);
  };
  for (const auto& [file, y] : ceilings) {
    trend_line(many_files ? "the ceiling of " + file : "the ceiling (device read speed)", y,
               " GB/s");
  }
  // Conditions without a ceiling (warm ones, or none asked for): every strategy together.
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
    trend_line("every strategy together (" + ConditionText(cond, many_files) + ")", y,
               "x its median");
  }

  // Outliers, per group, on log time.
  std::map<std::pair<Condition, std::string>, std::vector<const Json*>> groups;
  for (const Json& r : records) {
    if (!IsOk(r) || Wall(r) <= 0) continue;
    groups[{ConditionOf(r), r.value("strategy_spec", "")}].push_back(&r);
  }
  std::vector<std::string> lines;
  for (const auto& [key, rs] : groups) {
    std::vector<double> x;
    for (const Json* r : rs) x.push_back(std::log(Wall(*r)));
    const std::vector<bool> flags = paired::MadOutliers(x);
    const double med = std::exp(paired::Median(x));
    for (size_t i = 0; i < rs.size(); ++i) {
      if (!flags[i]) continue;
      lines.push_back(fmt::format("  {} {} rep {}: {:.3f} s, the group's median {:.3f} s ({})",
                                  ConditionText(key.first, many_files), key.second,
                                  rs[i]->value("rep", 0), Wall(*rs[i]), med,
                                  rs[i]->value("run_id", "")));
    }
  }
  if (!lines.empty()) {
    out += fmt::format("outliers (MAD rule, kept in every figure): {}\n", lines.size());
    for (size_t i = 0; i < lines.size() && i < 10; ++i) out += lines[i] + "\n";
    if (lines.size() > 10) out += fmt::format("  ... and {} more\n", lines.size() - 10);
  }
  return out;
}

}  // namespace loadbench
