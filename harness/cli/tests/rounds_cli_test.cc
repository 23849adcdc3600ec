// Rounds end to end with the built binary: an experiment with adaptive repetitions, a shuffled
// order, labels and a ceiling records every member of every round once, with its place in the
// round; the ceiling reads the device; env.json says how the runs were ordered and what the
// machine was doing before them; adaptive.json says why the rounds stopped. `run` takes the
// same options, and refuses bad ones with exit 2.
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/machine.h"
#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using test::Describe;
using test::RunLoadbench;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(test::ReadWholeFile(path));
}

class RoundsCliTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << text;
    return path;
  }
  test::TempDir dir_;
  std::string out_ = dir_.File("out"), data_ = dir_.File("data");
};

// Two labels of one strategy (an A/A pair) and fread, in adaptive rounds with a ceiling.
constexpr const char* kAuto = R"(# Question: do rounds hold every member once?
name = "rounds"
reps = "auto"
auto_min_rounds = 2
auto_max_rounds = 3
order = "shuffled"
seed = 5
ceiling = true
cache = "cold"

[[file]]
preset = "llama"
size = "8MiB"

[[strategy]]
name = "fread"
[[strategy]]
name = "mmap"
label = ["a", "b"]
)";

TEST_F(RoundsCliTest, AnAdaptiveExperimentRecordsRoundsCeilingsAndWhyItStopped) {
  if (const std::string why = test::CannotDropCachesReason(); !why.empty()) GTEST_SKIP() << why;
  struct statfs fs_info {};
  ASSERT_EQ(::statfs(dir_.path().c_str(), &fs_info), 0);
  if (fs_info.f_type == TMPFS_MAGIC) GTEST_SKIP() << "tmpfs: no cold runs, no O_DIRECT";
  const auto r =
      RunLoadbench({"experiment", Write("auto.toml", kAuto), "--out", out_, "--data", data_});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  const auto runs = test::ReadRuns(out_);
  // Fewer than six pairs give no interval, so the target cannot be met: all three rounds run.
  ASSERT_EQ(runs.size(), 3u * 4u);
  std::map<int, std::set<int>> positions;
  std::map<std::string, int> specs;
  for (const auto& run : runs) {
    EXPECT_EQ(run["status"], "ok") << run.dump();
    EXPECT_TRUE(positions[run["rep"].get<int>()].insert(run["position"].get<int>()).second);
    ++specs[run["strategy_spec"].get<std::string>()];
    if (run["strategy"] == "ceiling") {
      const auto bytes = run["ceiling_bytes"].get<uint64_t>();
      EXPECT_EQ(bytes, run["file_bytes"].get<uint64_t>());  // the bytes the loads read
      EXPECT_TRUE(run["params"]["recipe"].is_string()) << run.dump();
      EXPECT_GT(run["gb_per_s"].get<double>(), 0);
      EXPECT_NEAR(run["wall_s"].get<double>() * run["gb_per_s"].get<double>() * 1e9,
                  static_cast<double>(bytes), 1.0);
      EXPECT_TRUE(run["checksum_ok"].is_null());
    } else if (run["strategy"] == "mmap") {
      EXPECT_EQ("mmap:label=" + run["label"].get<std::string>(), run["strategy_spec"]);
      EXPECT_TRUE(run["checksum_ok"].get<bool>());
    }
  }
  for (const auto& [rep, places] : positions) {
    EXPECT_EQ(places, (std::set<int>{0, 1, 2, 3})) << "round " << rep;
  }
  EXPECT_EQ(specs, (std::map<std::string, int>{
                       {"ceiling", 3}, {"fread", 3}, {"mmap:label=a", 3}, {"mmap:label=b", 3}}));

  const auto env = ReadJson(out_ + "/env.json");
  EXPECT_EQ(env["rounds"]["reps"], "auto");
  EXPECT_EQ(env["rounds"]["order"], "shuffled");
  EXPECT_EQ(env["rounds"]["seed"], 5);
  EXPECT_EQ(env["rounds"]["ceiling"], true);
  EXPECT_EQ(env["rounds"]["baseline"], "fread");
  EXPECT_EQ(env["rounds"]["auto"]["max_rounds"], 3);
  for (const char* k :
       {"max_wait_s", "waited_s", "settled", "busy", "loadavg", "busy_processes", "dirty_bytes",
        "mem_available_bytes", "swap_used_bytes", "khugepaged", "warnings"}) {
    EXPECT_TRUE(env["stability"].contains(k)) << k;
  }
  EXPECT_TRUE(env["sessions"][0]["stability"]["warnings"].is_array());

  const auto adaptive = ReadJson(out_ + "/adaptive.json");
  EXPECT_EQ(adaptive["rounds"], 3);
  EXPECT_EQ(adaptive["stopped"], "max rounds");
  EXPECT_EQ(adaptive["met"], false);
  ASSERT_EQ(adaptive["comparisons"].size(), 2u);
  for (const auto& c : adaptive["comparisons"]) {
    EXPECT_EQ(c["baseline"], "fread");
    EXPECT_EQ(c["n"], 3);
    EXPECT_TRUE(c["half_width"].is_null());  // three pairs give no 95% interval
  }
  EXPECT_TRUE(Contains(r.out, "ceiling (the device's limit, the fastest read recipe: ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "): 3/3 ok")) << r.out;
  EXPECT_TRUE(Contains(r.out, "reps auto: 3 rounds, stopped: max rounds")) << r.out;
  EXPECT_TRUE(Contains(r.out, "paired with fread: 3 rounds are too few for a 95% interval (2 of "
                              "the ratios)"))
      << r.out;

  // Resumed, every round is recorded: nothing more runs.
  const auto again = RunLoadbench(
      {"experiment", dir_.File("auto.toml"), "--out", out_, "--data", data_, "--resume"});
  ASSERT_EQ(again.exit_code, 0) << Describe(again);
  EXPECT_EQ(test::ReadRuns(out_).size(), 12u);
}

TEST_F(RoundsCliTest, TheDryRunShowsRoundsBaselineAndCeiling) {
  const auto r = RunLoadbench(
      {"experiment", Write("auto.toml", kAuto), "--out", out_, "--data", data_, "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "reps: auto (until every paired ratio with the baseline is known "
                              "within ±10%, 2 to 3 rounds)"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "order: shuffled (seed 5)")) << r.out;
  const auto seeded = RunLoadbench({"experiment", dir_.File("auto.toml"), "--out", out_, "--data",
                                    data_, "--dry-run", "--seed", "9"});
  EXPECT_TRUE(Contains(seeded.out, "order: shuffled (seed 9)")) << Describe(seeded);
  EXPECT_TRUE(Contains(r.out, "baseline: fread")) << r.out;
  EXPECT_TRUE(Contains(r.out, "runs: 12 planned (at most)")) << r.out;
}

TEST_F(RoundsCliTest, RunTakesTheRoundOptions) {
  auto file = dir_.File("f.wlf");
  test::WriteWlfFile(file, test::OddTensors(), 4096, 1);
  const auto r = RunLoadbench({"run",
                               "--file",
                               file,
                               "--strategies",
                               "mmap:label=x,fread",
                               "--cache",
                               "warm",
                               "--reps",
                               "auto",
                               "--auto-min-rounds",
                               "1",
                               "--auto-max-rounds",
                               "2",
                               "--order",
                               "shuffled",
                               "--baseline",
                               "mmap:label=x",
                               "--sample-ms",
                               "0",
                               "--out",
                               out_});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const auto runs = test::ReadRuns(out_);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(ReadJson(out_ + "/adaptive.json")["stopped"], "max rounds");
  EXPECT_EQ(ReadJson(out_ + "/env.json")["rounds"]["baseline"], "mmap:label=x");
  EXPECT_TRUE(Contains(r.out, "paired with mmap:label=x: 2 rounds")) << r.out;

  struct Bad {
    std::vector<std::string> args;
    std::string message;
    std::string strategies = "fread,mmap_seq";
  };
  const std::vector<Bad> bad = {
      {{"--reps", "many"}, "--reps: 'many' is not a number of rounds (1 to 100000) or auto"},
      {{"--auto-target", "0.1"}, "--auto-* options need --reps auto"},
      {{"--reps", "auto", "--auto-target", "2"}, "must be above 0 and below 1"},
      {{"--reps", "auto", "--auto-budget", "soon"}, "--auto-budget: 'soon' is not a duration"},
      {{"--baseline", "mmap"}, "--baseline 'mmap' is not one of --strategies (fread,mmap_seq)"},
      {{}, "label 'a+b'", "mmap:label=a+b"},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> args = {"run",     "--file", file,    "--strategies",  b.strategies,
                                     "--cache", "warm",   "--out", dir_.File("bad")};
    args.insert(args.end(), b.args.begin(), b.args.end());
    const auto x = RunLoadbench(args);
    EXPECT_EQ(x.exit_code, 2) << Describe(x);
    EXPECT_TRUE(Contains(x.err, b.message)) << b.message << "\n" << Describe(x);
  }
}

}  // namespace
}  // namespace loadbench
