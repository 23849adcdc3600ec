// `run`'s flags become an experiment's tables, read by the readers of an experiment file
// (harness/experiment/tables.h): the flags and the file that says the same make the same
// experiment, and so the same records; a bad flag is named.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using test::Describe;
using test::RunLoadbench;

// What a record says of its run as planned, not of how it went.
std::vector<nlohmann::json> Planned(const std::string& out_dir) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : test::ReadRuns(out_dir)) {
    nlohmann::json p;
    for (const char* k :
         {"experiment", "strategy", "strategy_spec", "label", "params", "use", "file", "cache",
          "rep", "position", "after", "procs", "pattern", "memory_limit_bytes"}) {
      if (r.contains(k)) p[k] = r[k];
    }
    out.push_back(p);
  }
  return out;
}

nlohmann::json Rounds(const std::string& out_dir) {
  return nlohmann::json::parse(test::ReadWholeFile(out_dir + "/env.json"))["rounds"];
}

class RunTablesTest : public ::testing::Test {
 protected:
  void SetUp() override { test::WriteWlfFile(file_, test::OddTensors(), 4096, 1); }

  // The flags run, and the experiment file `toml` (whose [[file]] is added) run: the same runs
  // planned, the same rounds.
  void ExpectSame(std::vector<std::string> flags, const std::string& toml) {
    const std::string by_flags = dir_.File("flags-" + std::to_string(++n_));
    const std::string by_file = dir_.File("file-" + std::to_string(n_));
    flags.insert(flags.begin(), {"run", "--file", file_, "--out", by_flags, "--sample-ms", "0",
                                 "--settle-wait", "0"});
    const auto r = RunLoadbench(flags);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    const std::string path = dir_.File("e.toml");
    std::ofstream(path) << toml << "[[file]]\npath = \"" << file_ << "\"\n";
    const auto x = RunLoadbench({"experiment", path, "--out", by_file, "--settle-wait", "0"});
    ASSERT_EQ(x.exit_code, 0) << Describe(x);
    const auto planned = Planned(by_flags);
    EXPECT_FALSE(planned.empty());
    EXPECT_EQ(planned, Planned(by_file));
    EXPECT_EQ(Rounds(by_flags), Rounds(by_file));
  }

  test::TempDir dir_;
  std::string file_ = dir_.File("m.wlf");
  int n_ = 0;
};

TEST_F(RunTablesTest, TheDefaultStrategiesAreTheirTables) {
  ExpectSame({"--cache", "warm", "--reps", "2"}, R"(name = "run"
reps = 2
cache = "warm"
[[strategy]]
name = "fread"
[[strategy]]
name = "mmap"
[[strategy]]
name = "mmap_seq"
)");
}

// Options joined by --consume, an exec command, the order and its seed, the baseline as
// written, the pattern: each flag is its key.
TEST_F(RunTablesTest, EveryFlagIsItsKey) {
  ExpectSame({"--strategies", "fread:chunk=64KiB,mmap",
              "--consume",    "forward",
              "--exec",       "c=cat {file}",
              "--order",      "shuffled",
              "--seed",       "3",
              "--baseline",   "mmap",
              "--cache",      "warm",
              "--reps",       "2",
              "--experiment", "e1",
              "--timeout",    "60"},
             R"(name = "e1"
reps = 2
cache = "warm"
order = "shuffled"
seed = 3
timeout_s = 60
baseline = "mmap:consume=forward"
[[strategy]]
name = "fread"
chunk = "64KiB"
consume = "forward"
[[strategy]]
name = "mmap"
consume = "forward"
[[strategy]]
name = "exec"
label = "c"
command = ["cat", "{file}"]
)");
}

TEST_F(RunTablesTest, RepsAutoIsTheFilesRepsAuto) {
  ExpectSame({"--strategies", "mmap,fread", "--cache", "warm", "--reps", "auto",
              "--auto-min-rounds", "1", "--auto-max-rounds", "2", "--order", "interleaved"},
             R"(name = "run"
reps = "auto"
auto_min_rounds = 1
auto_max_rounds = 2
order = "interleaved"
cache = "warm"
[[strategy]]
name = "mmap"
[[strategy]]
name = "fread"
)");
}

// A value the readers refuse is named by its flag; what `run` parses itself is named as before.
TEST_F(RunTablesTest, ABadFlagIsNamed) {
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {{"--timeout", "1000000"},
       "loadbench run: --timeout: timeout_s must be a number of seconds, 0 to 604800"},
      {{"--pattern", "zz"}, "loadbench run: --pattern: unknown read pattern 'zz'"},
      {{"--memory-limit", "0"}, "loadbench run: --memory-limit: must not be 0"},
      {{"--baseline", "odirect"},
       "loadbench run: --baseline 'odirect' is not one of --strategies (fread,mmap,mmap_seq)"},
      {{"--exec", "a b=true"}, "loadbench run: exec:label=a b: label 'a b': a label is letters"},
      {{"--exec", "a=true", "--exec", "a=cat"}, "loadbench run: exec: label 'a' is used twice"},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> args = {"run", "--file", file_, "--out", dir_.File("bad")};
    args.insert(args.end(), b.args.begin(), b.args.end());
    const auto x = RunLoadbench(args);
    EXPECT_EQ(x.exit_code, 2) << Describe(x);
    EXPECT_NE(x.err.find(b.message), std::string::npos) << b.message << "\n" << Describe(x);
  }
}

}  // namespace
}  // namespace loadbench
