// Rounds: a repetition is a round in which every strategy of a comparison runs once, back to
// back, so that the machine's drift (this kind of VM's disk swings by a factor of several
// within minutes) hits every strategy of the round alike and cancels in within-round ratios.
// Here: the order inside a round, and the rule that stops adaptive repetitions (`--reps auto`);
// the comparison with the baseline they rest on is in harness/stats/comparison.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/stats/comparison.h"
#include "loaders/base/status.h"

namespace loadbench {

enum class RoundOrder {
  kBalanced,     // a Williams design: each member follows every other equally often
  kInterleaved,  // rotated by one each round: each member nearly always follows the same one
  kShuffled,     // a seeded shuffle each round
  kGrouped,      // no rounds: every repetition of one point back to back
};

Status ParseRoundOrder(const std::string& text, RoundOrder* out);
const char* RoundOrderName(RoundOrder order);

// The order of `n` members in round `round`: a permutation of 0..n-1, the same for the same
// arguments (a resumed experiment plans what the first session planned).
//
// Balanced: the rows of a Williams design (n rows for even n, 2n for odd n), in which every
// member sits at every position equally often and follows every other member equally often, so
// that what a run leaves behind (freed memory that costs a host fault again on first touch, a
// drained disk burst) lands on each successor alike over a cycle of rows. Each cycle of rows is
// used in its own seeded order, and the members are relabelled by a seeded permutation, so that
// two seeds give two different designs. Balance holds for whole cycles; a partial last cycle is
// nearly balanced.
std::vector<size_t> MembersInOrder(size_t n, int round, RoundOrder order, uint64_t seed);

// `--reps auto`: rounds are added until the 95% interval of every paired ratio against the
// baseline is within ±target of its estimate, or max_rounds or the time budget is reached.
struct AutoReps {
  double target = 0.10;
  int min_rounds = 6;  // the signed-rank interval is unbounded below 6 pairs
  int max_rounds = 30;
  double budget_s = 0;  // 0: none
  nlohmann::ordered_json ToJson() const;
};

// The fields of AutoReps from text (CLI): a target "0.1" or "10%", a budget "30min", "2h",
// "90s" or plain seconds. kBadInput names the option.
Status ParseTarget(const std::string& text, const char* what, double* out);
Status ParseDuration(const std::string& text, const char* what, double* seconds);
// Ranges shared by the CLI and experiment files; kBadInput with the reason.
Status CheckAutoReps(const AutoReps& a);

// Why adaptive repetitions stop after `rounds_done` rounds and `elapsed_s` seconds: "target
// met", "max rounds", "budget", or "" to go on. The target is only looked at from min_rounds
// on. `round_s` is the time the last round took: a round that would end past the budget is not
// started.
std::string StopReason(const AutoReps& a, const RoundsVerdict& v, int rounds_done, double elapsed_s,
                       double round_s);

// adaptive.json: the settings, the rounds, the verdict and why it stopped ("running" while
// it has not).
nlohmann::ordered_json AdaptiveJson(const AutoReps& a, const RoundsVerdict& v, double elapsed_s,
                                    const std::string& stopped);

// The adaptive loop. `run_round(r, &interrupted)` runs round r (a resumed run finds some
// recorded already); `records()` gives every record so far; `after_round` sees the verdict
// after each (it writes adaptive.json). The clock is injected so that tests can drive the loop
// with synthetic timings. Returns why it stopped ("interrupted" too).
struct RoundDriver {
  std::function<Status(int round, bool* interrupted)> run_round;
  std::function<std::vector<nlohmann::ordered_json>()> records;
  std::function<double()> now_s;
  std::function<void(const RoundsVerdict&, const std::string& stopped)> after_round;
};
Status RunAutoRounds(const AutoReps& a, const std::string& baseline, const RoundDriver& d,
                     std::string* stopped, RoundsVerdict* verdict);

// The summary's line on adaptive repetitions: rounds, why they stopped, the widest interval.
std::string AutoRepsLine(const AutoReps& a, const RoundsVerdict& v, const std::string& stopped);

// The default baseline among strategy spec texts: "fread" when present, else the first.
std::string DefaultBaseline(const std::vector<std::string>& specs);

}  // namespace loadbench
