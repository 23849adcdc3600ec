#include "harness/experiment/rounds.h"

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

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A generator of its own for (seed, stream): one round's draws do not depend on how many were
// drawn before it.
std::mt19937_64 Stream(uint64_t seed, uint32_t stream, uint32_t index) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), stream, index};
  return std::mt19937_64(seq);
}

void Shuffle(std::vector<size_t>* v, std::mt19937_64& rng) {
  for (size_t i = v->size(); i > 1; --i) {
    std::swap((*v)[i - 1], (*v)[std::uniform_int_distribution<size_t>(0, i - 1)(rng)]);
  }
}

// Row `row` of the Williams design for n members: row 0 is 0, 1, n-1, 2, n-2, ..., row i adds
// i to each (mod n); for odd n, rows n..2n-1 are rows 0..n-1 reversed.
std::vector<size_t> WilliamsRow(size_t n, size_t row) {
  std::vector<size_t> out(n);
  for (size_t j = 0; j < n; ++j) {
    const size_t first = j == 0 ? 0 : (j % 2 == 1 ? (j + 1) / 2 : n - j / 2);
    out[j] = (first + row) % n;
  }
  if (row >= n) std::reverse(out.begin(), out.end());
  return out;
}

std::vector<size_t> BalancedOrder(size_t n, int round, uint64_t seed) {
  const size_t rows = n % 2 == 0 ? n : 2 * n;
  const size_t cycle = static_cast<size_t>(round) / rows;
  std::vector<size_t> row_order(rows), labels(n);
  std::iota(row_order.begin(), row_order.end(), size_t{0});
  std::iota(labels.begin(), labels.end(), size_t{0});
  std::mt19937_64 cycle_rng = Stream(seed, 1, static_cast<uint32_t>(cycle));
  Shuffle(&row_order, cycle_rng);
  std::mt19937_64 label_rng = Stream(seed, 2, 0);
  Shuffle(&labels, label_rng);
  std::vector<size_t> out = WilliamsRow(n, row_order[static_cast<size_t>(round) % rows]);
  for (size_t& m : out) m = labels[m];
  return out;
}

}  // namespace

Status ParseRoundOrder(const std::string& text, RoundOrder* out) {
  if (text == "balanced") {
    *out = RoundOrder::kBalanced;
  } else if (text == "interleaved") {
    *out = RoundOrder::kInterleaved;
  } else if (text == "shuffled") {
    *out = RoundOrder::kShuffled;
  } else if (text == "grouped") {
    *out = RoundOrder::kGrouped;
  } else {
    return Status::BadInput(
        fmt::format("order '{}' is not balanced, interleaved, shuffled or grouped", text));
  }
  return Status::Ok();
}

const char* RoundOrderName(RoundOrder order) {
  switch (order) {
    case RoundOrder::kBalanced:
      return "balanced";
    case RoundOrder::kInterleaved:
      return "interleaved";
    case RoundOrder::kShuffled:
      return "shuffled";
    case RoundOrder::kGrouped:
      return "grouped";
  }
  return "?";
}

std::vector<size_t> MembersInOrder(size_t n, int round, RoundOrder order, uint64_t seed) {
  std::vector<size_t> out(n);
  std::iota(out.begin(), out.end(), size_t{0});
  if (n == 0) return out;
  if (order == RoundOrder::kBalanced) return BalancedOrder(n, round, seed);
  if (order == RoundOrder::kShuffled) {
    // A stream of its own per round: round r's order does not depend on how many were drawn
    // before it.
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(round)};
    std::mt19937_64 rng(seq);
    Shuffle(&out, rng);
  } else if (order == RoundOrder::kInterleaved) {
    std::rotate(out.begin(), out.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(round) % n),
                out.end());
  }
  return out;
}

Json AutoReps::ToJson() const {
  return {{"target", target},
          {"min_rounds", min_rounds},
          {"max_rounds", max_rounds},
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
                                        "±10%)",
                                        a.target));
  }
  if (a.min_rounds < 1 || a.max_rounds < a.min_rounds || a.max_rounds > 10000) {
    return Status::BadInput(
        fmt::format("auto rounds: min {} and max {} must satisfy 1 <= min <= max <= 10000",
                    a.min_rounds, a.max_rounds));
  }
  if (!(a.budget_s >= 0)) return Status::BadInput("auto budget must not be negative");
  return Status::Ok();
}

std::string StopReason(const AutoReps& a, const RoundsVerdict& v, int rounds_done, double elapsed_s,
                       double round_s) {
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
    j["comparisons"].push_back({{"file", c.file},
                                {"cache", c.cache},
                                {"procs", c.procs},
                                {"memory_limit_bytes", c.memory_limit_bytes},
                                {"pattern", c.pattern},
                                {"strategy_spec", c.spec},
                                {"role", c.role},
                                {"marks", c.marks},
                                {"baseline", c.baseline},
                                {"n", c.n},
                                {"ratio", finite(c.ratio)},
                                {"low", c.high < kInf ? finite(c.low) : Json(nullptr)},
                                {"high", finite(c.high)},
                                {"half_width", finite(c.half_width)},
                                {"met", c.met},
                                {"significant", c.significant}});
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
                             widest->cache, MarkedSpec(*widest))
               : fmt::format("; {} {} has too few rounds for an interval", widest->cache,
                             MarkedSpec(*widest));
  }
  return out + " (adaptive.json)\n";
}

std::string DefaultBaseline(const std::vector<std::string>& specs) {
  for (const std::string& s : specs) {
    if (s == "fread") return s;
  }
  return specs.empty() ? "" : specs.front();
}

}  // namespace loadbench
