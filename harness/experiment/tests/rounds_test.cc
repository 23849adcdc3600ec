// Rounds: the order inside a round, the paired comparison with the baseline read from run
// records, the adaptive loop driven by synthetic timings through its injected round runner and
// clock (it stops when the interval is narrow, goes on while it is wide, keeps to its budget),
// and the summary's warnings on drift and outliers.
#include "harness/experiment/rounds.h"
#include "harness/stats/noise.h"
#include "harness/stats/summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

Json Record(const std::string& spec, int rep, double wall_s, const std::string& cache = "cold") {
  return {{"run_id", spec + "-" + std::to_string(rep)},
          {"strategy", spec},
          {"strategy_spec", spec},
          {"file", "/data/f.wlf"},
          {"cache", cache},
          {"rep", rep},
          {"position", 0},
          {"status", "ok"},
          {"wall_s", wall_s}};
}

Json Ceiling(int rep, double gb_per_s) {
  Json r = Record("ceiling", rep, 1.0 / gb_per_s);
  r["gb_per_s"] = gb_per_s;
  return r;
}

// Synthetic rounds: fread takes `base` seconds, mmap_seq half of it, each run with log-normal
// noise of `sigma`, and every run of a round shares the round's drift factor.
class Synthetic {
 public:
  Synthetic(double sigma, uint64_t seed) : sigma_(sigma), rng_(seed) {}

  void Round(int rep, std::vector<Json>* out) {
    std::normal_distribution<double> noise(0, sigma_);
    const double drift = 1 + 0.1 * rep;  // the machine slows down, for both alike
    out->push_back(Record("fread", rep, 4.0 * drift * std::exp(noise(rng_))));
    out->push_back(Record("mmap_seq", rep, 2.0 * drift * std::exp(noise(rng_))));
  }

 private:
  double sigma_;
  std::mt19937_64 rng_;
};

TEST(RoundsOrder, InterleavedRotatesShuffledIsASeededPermutationGroupedKeepsOrder) {
  for (int round = 0; round < 7; ++round) {
    const std::vector<size_t> order = MembersInOrder(5, round, RoundOrder::kInterleaved, 0);
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(order[k], (k + round) % 5);
  }
  std::set<std::vector<size_t>> seen;
  for (int round = 0; round < 20; ++round) {
    std::vector<size_t> order = MembersInOrder(6, round, RoundOrder::kShuffled, 42);
    EXPECT_EQ(order, MembersInOrder(6, round, RoundOrder::kShuffled, 42));  // reproducible
    seen.insert(order);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  }
  EXPECT_GT(seen.size(), 10u);
  EXPECT_NE(MembersInOrder(6, 3, RoundOrder::kShuffled, 1),
            MembersInOrder(6, 3, RoundOrder::kShuffled, 2));
  EXPECT_EQ(MembersInOrder(3, 5, RoundOrder::kGrouped, 0), (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(MembersInOrder(0, 1, RoundOrder::kShuffled, 0).empty());
}

// Over a whole cycle of rows (n for even n, 2n for odd n) every member sits at every position
// equally often and directly follows every other member equally often (once for even n, twice
// for odd n); the design is the same for the same seed and another for another seed.
TEST(RoundsOrder, BalancedIsAWilliamsDesignOverEachCycle) {
  for (size_t n = 2; n <= 7; ++n) {
    const int rows = static_cast<int>(n % 2 == 0 ? n : 2 * n);
    for (int cycle = 0; cycle < 2; ++cycle) {
      std::vector<std::vector<int>> at(n, std::vector<int>(n, 0)), follows = at;
      for (int r = cycle * rows; r < (cycle + 1) * rows; ++r) {
        const std::vector<size_t> order = MembersInOrder(n, r, RoundOrder::kBalanced, 9);
        EXPECT_EQ(order, MembersInOrder(n, r, RoundOrder::kBalanced, 9));
        ASSERT_EQ(std::set<size_t>(order.begin(), order.end()).size(), n);
        for (size_t k = 0; k < n; ++k) ++at[order[k]][k];
        for (size_t k = 1; k < n; ++k) ++follows[order[k - 1]][order[k]];
      }
      const int each = n % 2 == 0 ? 1 : 2;
      for (size_t a = 0; a < n; ++a) {
        for (size_t b = 0; b < n; ++b) {
          EXPECT_EQ(at[a][b], each) << "n " << n << ": member " << a << " at position " << b;
          if (a != b) {
            EXPECT_EQ(follows[a][b], each) << "n " << n << ": " << b << " after " << a;
          }
        }
      }
    }
  }
  std::set<std::vector<size_t>> designs;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    std::vector<size_t> first_rows;
    for (int r = 0; r < 4; ++r) {
      for (size_t m : MembersInOrder(4, r, RoundOrder::kBalanced, seed)) first_rows.push_back(m);
    }
    designs.insert(first_rows);
  }
  EXPECT_GT(designs.size(), 4u);
}

// Runs pair only with the baseline's run of the same round *and* the same condition: the same
// rep in another cache state, file, procs count or memory limit is another comparison.
TEST(RoundsCompare, PairsOnlyWithinTheSameCondition) {
  std::vector<Json> records;
  for (int rep = 0; rep < 6; ++rep) {
    records.push_back(Record("fread", rep, 4.0, "cold"));
    records.push_back(Record("mmap_seq", rep, 2.0, "cold"));
    records.push_back(Record("fread", rep, 1.0, "warm"));
    records.push_back(Record("mmap_seq", rep, 3.0, "warm"));
    Json other_file = Record("fread", rep, 8.0, "cold");
    other_file["file"] = "/data/g.wlf";
    records.push_back(other_file);
    other_file["strategy"] = other_file["strategy_spec"] = "mmap_seq";
    other_file["wall_s"] = 1.0;
    records.push_back(other_file);
    for (int proc = 0; proc < 2; ++proc) {  // two readers each: the run's time is the slower's
      Json two = Record("fread", rep, 5.0 - proc, "cold");
      two["procs"] = 2;
      two["proc"] = proc;
      records.push_back(two);
      two["strategy"] = two["strategy_spec"] = "mmap_seq";
      two["wall_s"] = 10.0 - proc;
      records.push_back(two);
    }
    Json limited = Record("fread", rep, 2.0, "cold");
    limited["memory_limit_bytes"] = 1 << 30;
    records.push_back(limited);
    limited["strategy"] = limited["strategy_spec"] = "mmap_seq";
    limited["wall_s"] = 0.5;
    records.push_back(limited);
  }
  const RoundsVerdict v = CompareWithBaseline(records, "fread", 0.1);
  std::vector<std::tuple<std::string, std::string, int, uint64_t, double>> got;
  for (const Comparison& c : v.comparisons) {
    EXPECT_EQ(c.n, 6) << c.cache << " " << c.file;
    got.emplace_back(c.file, c.cache, c.procs, c.memory_limit_bytes, c.ratio);
  }
  std::sort(got.begin(), got.end());
  const std::vector<std::tuple<std::string, std::string, int, uint64_t, double>> want = {
      {"/data/f.wlf", "cold", 1, 0, 0.5},
      {"/data/f.wlf", "cold", 1, 1 << 30, 0.25},
      {"/data/f.wlf", "cold", 2, 0, 2.0},
      {"/data/f.wlf", "warm", 1, 0, 3.0},
      {"/data/g.wlf", "cold", 1, 0, 0.125}};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::get<1>(got[i]), std::get<1>(want[i]));
    EXPECT_NEAR(std::get<4>(got[i]), std::get<4>(want[i]), 1e-9)
        << std::get<0>(want[i]) << " " << std::get<1>(want[i]) << " x" << std::get<2>(want[i]);
  }
}

// Runs made in grouped order (no position) shared no round: they are never paired.
TEST(RoundsCompare, GroupedRunsAreNeverPaired) {
  std::vector<Json> records;
  for (int rep = 0; rep < 8; ++rep) {
    for (const char* spec : {"fread", "mmap_seq"}) {
      Json r = Record(spec, rep, spec == std::string("fread") ? 4.0 : 2.0);
      r.erase("position");
      records.push_back(r);
    }
  }
  EXPECT_TRUE(CompareWithBaseline(records, "fread", 0.1).comparisons.empty());
  EXPECT_EQ(NoiseSummary(records, "fread").find("paired"), std::string::npos);
}

TEST(RoundsCompare, PairsWithinRoundsAndLeavesCeilingsAndFailuresOut) {
  std::vector<Json> records;
  Synthetic s(0.01, 1);
  for (int rep = 0; rep < 10; ++rep) s.Round(rep, &records);
  for (int rep = 0; rep < 10; ++rep) records.push_back(Ceiling(rep, 1.0 + rep));
  Json failed = Record("mmap_seq", 10, 0.001);
  failed["status"] = "failed";
  records.push_back(failed);
  records.push_back(Record("mmap_seq", 11, 0.001));  // a round fread has no run in: no pair
  const RoundsVerdict v = CompareWithBaseline(records, "fread", 0.10);
  ASSERT_EQ(v.comparisons.size(), 1u);  // the ceiling is not a strategy
  const Comparison& c = v.comparisons[0];
  EXPECT_EQ(c.spec, "mmap_seq");
  EXPECT_EQ(c.n, 10);
  EXPECT_NEAR(c.ratio, 0.5, 0.02);  // the drift cancels within rounds
  EXPECT_LT(c.low, c.ratio);
  EXPECT_GT(c.high, c.ratio);
  EXPECT_TRUE(c.significant);
  EXPECT_TRUE(c.met);
  EXPECT_TRUE(v.met);
  EXPECT_EQ(v.rounds, 11);

  // With a baseline that has no runs there are no pairs: nothing is met.
  const RoundsVerdict none = CompareWithBaseline(records, "io_uring", 0.10);
  for (const Comparison& x : none.comparisons) EXPECT_EQ(x.n, 0);
  EXPECT_FALSE(none.met);
}

// A run of several readers counts only whole: one failed or missing reader and the run has no
// time in its round, so it pairs with nothing; the others' ok records do not stand in for it.
// The time runs from the first reader's start to the last one's end.
TEST(RoundsCompare, ARunCountsOnlyWhole) {
  std::vector<Json> records;
  for (int rep = 0; rep < 8; ++rep) {
    for (int proc = 0; proc < 2; ++proc) {
      for (const char* spec : {"fread", "mmap_seq"}) {
        const bool fast = spec == std::string("mmap_seq");
        Json r = Record(spec, rep, (fast ? 1.0 : 4.0) + proc);
        r["procs"] = 2;
        r["proc"] = proc;
        r["load_start_unix_s"] = 1000.0 * rep + 0.25 * proc;
        if (fast && rep == 3 && proc == 1) {
          r["status"] = "failed";
          r["error"] = "timed out after 60 s";
        }
        if (!(fast && rep == 5 && proc == 0)) records.push_back(r);  // rep 5: reader 0 missing
      }
    }
  }
  const RoundsVerdict v = CompareWithBaseline(records, "fread", 0.5);
  ASSERT_EQ(v.comparisons.size(), 1u);
  EXPECT_EQ(v.comparisons[0].n, 6);
  // fread: 5 s + 0.25 s of start spread; mmap_seq: 2 s + 0.25 s.
  EXPECT_NEAR(v.comparisons[0].ratio, 2.25 / 5.25, 1e-9);
  const std::string summary = NoiseSummary(records, "fread");
  EXPECT_NE(summary.find("not paired: 2 runs of several readers"), std::string::npos) << summary;
  EXPECT_NE(summary.find("cold x2 procs mmap_seq round 3: reader 1: failed: timed out after "
                         "60 s"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("round 5: reader 0: no record"), std::string::npos) << summary;
}

// A command that sent no checksum is ranked and paired like any strategy, and marked
// unverified, with the region its time covers, wherever its ratio shows: the paired lines,
// adaptive.json, the reps auto line.
TEST(RoundsCompare, UnverifiedRunsAreMarkedWhereverTheyPair) {
  std::vector<Json> records;
  for (int rep = 0; rep < 8; ++rep) {
    records.push_back(Record("fread", rep, 4.0 + 0.1 * rep));
    Json r = Record("my_loader", rep, 2.0 + 0.3 * (rep % 3));
    r["verify"] = "none";
    r["exec"] = {{"timed", "command"}};
    records.push_back(r);
  }
  const RoundsVerdict v = CompareWithBaseline(records, "fread", 0.5);
  ASSERT_EQ(v.comparisons.size(), 1u);
  const std::string marks = "unverified, whole command";
  EXPECT_EQ(v.comparisons[0].marks, marks);
  const std::string summary = NoiseSummary(records, "fread");
  EXPECT_NE(summary.find("cold  my_loader (" + marks + "): 0."), std::string::npos) << summary;
  EXPECT_EQ(AdaptiveJson(AutoReps{}, v, 1.0, "met")["comparisons"][0]["marks"], marks);
  EXPECT_NE(AutoRepsLine(AutoReps{}, v, "met").find("my_loader (" + marks + ")"),
            std::string::npos);
  EXPECT_NE(SummaryTable(records).find("my_loader (" + marks + ")"), std::string::npos);
}

TEST(RoundsCompare, FewerThanSixRoundsGiveNoIntervalAndMeetNothing) {
  std::vector<Json> records;
  Synthetic s(0.001, 2);
  for (int rep = 0; rep < 5; ++rep) s.Round(rep, &records);
  const RoundsVerdict v = CompareWithBaseline(records, "fread", 0.5);
  ASSERT_EQ(v.comparisons.size(), 1u);
  EXPECT_TRUE(std::isinf(v.comparisons[0].half_width));
  EXPECT_FALSE(v.comparisons[0].met);
  EXPECT_FALSE(v.comparisons[0].significant);
  const Json j = AdaptiveJson(AutoReps{}, v, 1.0, "running");
  EXPECT_TRUE(j["comparisons"][0]["high"].is_null());
  EXPECT_TRUE(j["comparisons"][0]["low"].is_null());
  EXPECT_TRUE(j["comparisons"][0]["half_width"].is_null());
  EXPECT_EQ(j["stopped"], "running");
  const std::string summary = NoiseSummary(records, "fread");
  // Too few rounds for an interval: one line for all such ratios, saying what would give one.
  EXPECT_EQ(summary.find("cold  mmap_seq"), std::string::npos) << summary;
  EXPECT_NE(summary.find("paired with fread: 5 rounds are too few for a 95% interval (1 of the "
                         "ratios); 6 rounds give one (--reps 6)"),
            std::string::npos)
      << summary;
}

// The adaptive loop over synthetic rounds, as the experiment drives it: a round already
// recorded is not run again, the clock advances `round_s` per round.
struct Loop {
  Loop(double sigma, double round_s) : synthetic(sigma, 3), round_s(round_s) {}

  std::string Drive(const AutoReps& a, RoundsVerdict* v) {
    RoundDriver d;
    d.run_round = [&](int round, bool* interrupted) {
      if (round == interrupt_at) {
        *interrupted = true;
        return Status::Ok();
      }
      if (round >= recorded_rounds) {
        synthetic.Round(round, &records);
        clock += round_s;
        ++rounds_run;
      }
      return Status::Ok();
    };
    d.records = [&] { return records; };
    d.now_s = [&] { return clock; };
    d.after_round = [&](const RoundsVerdict&, const std::string& why) { reports.push_back(why); };
    std::string stopped;
    EXPECT_TRUE(RunAutoRounds(a, "fread", d, &stopped, v).ok());
    return stopped;
  }

  Synthetic synthetic;
  double round_s;
  double clock = 0;
  std::vector<Json> records;
  int recorded_rounds = 0;  // rounds 0..recorded_rounds-1 are already in `records`
  int interrupt_at = -1;
  int rounds_run = 0;
  std::vector<std::string> reports;
};

TEST(RoundsAuto, StopsAtTheMinimumWhenTheIntervalIsNarrow) {
  Loop loop(0.01, 10);
  AutoReps a;  // ±10%, 6..30 rounds
  RoundsVerdict v;
  EXPECT_EQ(loop.Drive(a, &v), "target met");
  EXPECT_EQ(loop.rounds_run, 6);
  EXPECT_TRUE(v.met);
  ASSERT_EQ(v.comparisons.size(), 1u);
  EXPECT_LE(v.comparisons[0].half_width, 0.10);
  // One report per round ("running"), then the final one.
  ASSERT_EQ(loop.reports.size(), 7u);
  EXPECT_EQ(loop.reports.front(), "running");
  EXPECT_EQ(loop.reports.back(), "target met");
}

TEST(RoundsAuto, GoesOnWhileTheIntervalIsWideUpToMaxRounds) {
  Loop loop(0.6, 10);  // this machine's worst: a 2x difference hidden in noise of ~80%
  AutoReps a;
  a.target = 0.02;
  a.max_rounds = 15;
  RoundsVerdict v;
  EXPECT_EQ(loop.Drive(a, &v), "max rounds");
  EXPECT_EQ(loop.rounds_run, 15);
  EXPECT_FALSE(v.met);
  EXPECT_GT(v.comparisons[0].half_width, 0.02);
}

TEST(RoundsAuto, StartsNoRoundThatWouldEndPastTheBudget) {
  Loop loop(0.6, 10);
  AutoReps a;
  a.target = 0.02;
  a.budget_s = 35;  // rounds of 10 s: the fourth would end at 40 s
  RoundsVerdict v;
  EXPECT_EQ(loop.Drive(a, &v), "budget");
  EXPECT_EQ(loop.rounds_run, 3);
}

TEST(RoundsAuto, ResumedRoundsCountAndAnInterruptStops) {
  Loop resumed(0.01, 10);
  for (int rep = 0; rep < 8; ++rep) resumed.synthetic.Round(rep, &resumed.records);
  resumed.recorded_rounds = 8;
  RoundsVerdict v;
  EXPECT_EQ(resumed.Drive(AutoReps{}, &v), "target met");
  EXPECT_EQ(resumed.rounds_run, 0);  // the recorded rounds already meet the target

  Loop stopped(0.6, 10);
  stopped.interrupt_at = 2;
  EXPECT_EQ(stopped.Drive(AutoReps{}, &v), "interrupted");
  EXPECT_EQ(stopped.rounds_run, 2);
  EXPECT_EQ(stopped.reports.back(), "interrupted");
}

TEST(RoundsNoise, WarnsOfAPlantedDriftAndNotOfAFlatCeiling) {
  std::vector<Json> drifting, flat;
  Synthetic s(0.05, 4);
  for (int rep = 0; rep < 12; ++rep) {
    s.Round(rep, &drifting);
    s.Round(rep, &flat);
    drifting.push_back(Ceiling(rep, 2.0 - 0.1 * rep));               // falls steadily
    flat.push_back(Ceiling(rep, 1.5 + 0.05 * ((rep * 7) % 5 - 2)));  // wobbles, no trend
  }
  EXPECT_NE(NoiseSummary(drifting, "fread").find("WARNING drift: the ceiling"), std::string::npos)
      << NoiseSummary(drifting, "fread");
  EXPECT_EQ(NoiseSummary(flat, "fread").find("drift"), std::string::npos)
      << NoiseSummary(flat, "fread");

  // Without ceilings, the strategies drifting together are the series.
  std::vector<Json> together;
  Synthetic t(0.01, 5);  // Synthetic drifts by 10% per round
  for (int rep = 0; rep < 12; ++rep) t.Round(rep, &together);
  EXPECT_NE(NoiseSummary(together, "fread").find("WARNING drift: every strategy together"),
            std::string::npos);
}

TEST(RoundsNoise, FlagsAPlantedOutlierAndKeepsIt) {
  std::vector<Json> records;
  const double fread[] = {4.0, 4.1, 3.9, 4.05, 3.95, 4.02, 40.0, 3.98};
  for (int rep = 0; rep < 8; ++rep) {
    records.push_back(Record("fread", rep, fread[rep]));
    records.push_back(Record("mmap_seq", rep, 2.0 + 0.01 * rep));
  }
  const std::string text = NoiseSummary(records, "fread");
  EXPECT_NE(text.find("outliers (MAD rule, kept in every figure): 1"), std::string::npos) << text;
  EXPECT_NE(text.find("fread rep 6: 40.000 s"), std::string::npos) << text;
  // Without the list (the default output of run and experiment): the count only.
  const std::string counted = NoiseSummary(records, "fread", false);
  EXPECT_NE(counted.find("outliers (MAD rule, kept in every figure): 1 (listed by --verbose"),
            std::string::npos)
      << counted;
  EXPECT_EQ(counted.find("rep 6"), std::string::npos) << counted;
  // Kept: the comparison still has all 8 rounds.
  EXPECT_EQ(CompareWithBaseline(records, "fread", 0.1).comparisons[0].n, 8);
}

TEST(RoundsParse, TargetsAndDurations) {
  double v = 0;
  ASSERT_TRUE(ParseTarget("0.1", "t", &v).ok());
  EXPECT_DOUBLE_EQ(v, 0.1);
  ASSERT_TRUE(ParseTarget("5%", "t", &v).ok());
  EXPECT_DOUBLE_EQ(v, 0.05);
  EXPECT_FALSE(ParseTarget("ten", "t", &v).ok());
  EXPECT_FALSE(ParseTarget("0.1x", "t", &v).ok());
  ASSERT_TRUE(ParseDuration("90", "d", &v).ok());
  EXPECT_DOUBLE_EQ(v, 90);
  ASSERT_TRUE(ParseDuration("30min", "d", &v).ok());
  EXPECT_DOUBLE_EQ(v, 1800);
  ASSERT_TRUE(ParseDuration("2h", "d", &v).ok());
  EXPECT_DOUBLE_EQ(v, 7200);
  EXPECT_FALSE(ParseDuration("-1s", "d", &v).ok());
  EXPECT_FALSE(ParseDuration("3 days", "d", &v).ok());
  AutoReps a;
  EXPECT_TRUE(CheckAutoReps(a).ok());
  a.target = 0;
  EXPECT_FALSE(CheckAutoReps(a).ok());
  EXPECT_EQ(DefaultBaseline({"mmap", "fread"}), "fread");
  EXPECT_EQ(DefaultBaseline({"mmap", "io_uring"}), "mmap");
}

}  // namespace
}  // namespace loadbench
