// `loadbench experiment`, end to end with the built binary: a malformed file is exit 2 naming
// the line; --dry-run prints the plan and writes nothing; an interrupted experiment keeps its
// runs and, run again, records exactly the planned runs, none twice, even after a crash cut
// its last line short; a worker killed by its timeout or by the OOM killer is recorded and the
// experiment goes on; --cleanup removes what the command generated.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/process/cgroup.h"
#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;
using test::Describe;
using test::ProcessResult;
using test::RunLoadbench;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class ExperimentCliTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << text;
    return path;
  }
  std::vector<std::string> Args(const std::string& toml, std::vector<std::string> more = {}) {
    std::vector<std::string> a = {"experiment", toml, "--out", out_, "--data", data_};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  // (strategy_spec, cache, rep) of every record, counted.
  std::map<std::tuple<std::string, std::string, int>, int> Recorded() {
    std::map<std::tuple<std::string, std::string, int>, int> seen;
    for (const auto& r : test::ReadRuns(out_)) {
      ++seen[{r["strategy_spec"].get<std::string>(), r["cache"].get<std::string>(),
              r["rep"].get<int>()}];
    }
    return seen;
  }

  test::TempDir dir_;
  std::string out_ = dir_.File("out"), data_ = dir_.File("data");
};

// Three strategies, warm (it needs no root), three repetitions: 9 runs on a small file.
constexpr const char* kSmall = R"(# Question: does resuming work?
name = "small"
reps = 3
cache = "warm"

[[file]]
preset = "llama"
size = "8MiB"

[[strategy]]
name = "fread"
[[strategy]]
name = "pread"
[[strategy]]
name = "mmap"
)";

TEST_F(ExperimentCliTest, AMalformedFileIsExit2NamingTheLine) {
  const std::string path = Write("bad.toml", "name = \"x\"\nreps = 3\nreps_typo = 4\n");
  const ProcessResult r = RunLoadbench(Args(path));
  EXPECT_EQ(r.signal, 0) << Describe(r);
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << Describe(r);
  EXPECT_TRUE(Contains(r.err, path + ":3: unknown key 'reps_typo'")) << Describe(r);
  const std::string syntax = Write("syntax.toml", "name = \"x\"\n\n[[file]\n");
  const ProcessResult s = RunLoadbench(Args(syntax));
  EXPECT_EQ(s.exit_code, 2) << Describe(s);
  EXPECT_TRUE(Contains(s.err, syntax + ":3:")) << Describe(s);
  EXPECT_FALSE(fs::exists(out_));
  EXPECT_FALSE(fs::exists(data_));
}

TEST_F(ExperimentCliTest, DryRunPrintsThePlanAndWritesNothing) {
  const ProcessResult r = RunLoadbench(Args(Write("small.toml", kSmall), {"--dry-run"}));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "question: does resuming work?")) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "runs: 9 planned, 9 to run")) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "to generate")) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "MiB to generate in " + data_)) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "time: ")) << Describe(r);
  EXPECT_FALSE(fs::exists(out_));
  EXPECT_FALSE(fs::exists(data_));
}

TEST_F(ExperimentCliTest, InterruptedThenResumedRecordsEveryPlannedRunOnce) {
  const std::string toml = Write("small.toml", kSmall);
  bool sent = false;
  // SIGINT once the third run is recorded (--verbose: a line per run): the current worker is
  // stopped, no half line.
  const ProcessResult first =
      RunLoadbench(Args(toml, {"--verbose"}), [&](const std::string& err, pid_t pid) {
        if (!sent && Contains(err, "[3/9]")) {
          sent = true;
          ::kill(pid, SIGINT);
        }
      });
  ASSERT_TRUE(sent) << Describe(first);
  EXPECT_EQ(first.exit_code, 130) << Describe(first);
  // The command to type: the same one, the binary as it was started, with --resume.
  EXPECT_TRUE(Contains(first.err, fmt::format("to resume:\n  {} experiment {} --data {} --verbose "
                                              "--resume {}\n",
                                              LOADBENCH_BINARY, toml, data_, out_)))
      << Describe(first);
  const size_t kept = test::ReadRuns(out_).size();  // throws on a half line
  EXPECT_GE(kept, 3u);
  EXPECT_LT(kept, 9u);

  // A crash inside a write (not a SIGINT) could leave a last line cut short: resuming drops it.
  { std::ofstream(out_ + "/runs.jsonl", std::ios::app) << R"({"run_id": "cut)"; }
  const ProcessResult second = RunLoadbench(Args(toml, {"--resume"}));
  EXPECT_EQ(second.exit_code, 0) << Describe(second);
  EXPECT_TRUE(Contains(second.err, "cut short")) << Describe(second);
  EXPECT_TRUE(Contains(second.err, std::to_string(kept) + " already recorded")) << Describe(second);
  EXPECT_FALSE(Contains(second.err, "generated")) << "the file is reused\n" << Describe(second);
  // Without --verbose and off a terminal: no line per ok run, a line per tenth of the runs.
  EXPECT_FALSE(Contains(second.err, ": ok ")) << Describe(second);
  EXPECT_TRUE(Contains(second.err, "/9 runs (")) << Describe(second);
  EXPECT_TRUE(Contains(second.err, " left\n")) << Describe(second);
  const auto seen = Recorded();
  EXPECT_EQ(seen.size(), 9u);
  for (const auto& [key, n] : seen) {
    EXPECT_EQ(n, 1) << std::get<0>(key) << " " << std::get<2>(key) << " recorded " << n << "x";
  }
  for (const auto& r : test::ReadRuns(out_)) EXPECT_EQ(r["status"], "ok") << r.dump();

  // Complete: a third run runs nothing.
  const ProcessResult third = RunLoadbench(Args(toml, {"--resume"}));
  EXPECT_EQ(third.exit_code, 0) << Describe(third);
  EXPECT_TRUE(Contains(third.err, "9 already recorded, 0 to run")) << Describe(third);
  EXPECT_EQ(test::ReadRuns(out_).size(), 9u);
}

// Resuming knows a run by its cache state too: with both, an interrupted round's warm runs are
// not taken for its cold ones (nor the other way round). Cold runs on a file that cannot be
// made cold are recorded invalid; they are recorded all the same, once each.
TEST_F(ExperimentCliTest, ResumingWithBothCacheStatesRecordsEachRunOnce) {
  std::string text = kSmall;
  text.replace(text.find("reps = 3"), 8, "reps = 2");
  text.replace(text.find("cache = \"warm\""), 14, "cache = \"both\"");
  const std::string pread = "[[strategy]]\nname = \"pread\"\n";
  text.erase(text.find(pread), pread.size());
  const std::string toml = Write("both.toml", text);
  bool sent = false;
  const ProcessResult first =
      RunLoadbench(Args(toml, {"--verbose"}), [&](const std::string& err, pid_t pid) {
        if (!sent && Contains(err, "[3/8]")) {
          sent = true;
          ::kill(pid, SIGINT);
        }
      });
  ASSERT_TRUE(sent) << Describe(first);
  ASSERT_EQ(first.exit_code, 130) << Describe(first);
  const size_t kept = test::ReadRuns(out_).size();
  ASSERT_GE(kept, 3u);
  ASSERT_LT(kept, 8u);
  const ProcessResult second = RunLoadbench(Args(toml, {"--resume"}));
  EXPECT_TRUE(second.exit_code == 0 || second.exit_code == 1) << Describe(second);
  const auto seen = Recorded();
  EXPECT_EQ(seen.size(), 8u);
  for (const auto& [key, n] : seen) {
    EXPECT_EQ(n, 1) << std::get<0>(key) << " " << std::get<1>(key) << " rep " << std::get<2>(key)
                    << " recorded " << n << "x";
  }
  for (const char* cache : {"cold", "warm"}) {
    for (int rep : {0, 1}) {
      for (const char* spec : {"fread", "mmap"}) {
        EXPECT_EQ(seen.count({spec, cache, rep}), 1u) << spec << " " << cache << " rep " << rep;
      }
    }
  }
}

TEST_F(ExperimentCliTest, AResultsFolderOfAnotherExperimentIsRefused) {
  ASSERT_EQ(RunLoadbench(Args(Write("small.toml", kSmall), {"--reps", "1"})).exit_code, 0);
  std::string other = kSmall;
  other.replace(other.find("\"small\""), 7, "\"other\"");
  const ProcessResult r = RunLoadbench(Args(Write("other.toml", other), {"--resume"}));
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "holds runs of experiment 'small', not 'other'")) << Describe(r);
}

TEST_F(ExperimentCliTest, AWorkerPastItsTimeoutIsRecordedFailedAndTheRestRuns) {
  std::string text = kSmall;
  text.replace(text.find("reps = 3"), 8, "reps = 1\ntimeout_s = 0.001");
  const ProcessResult r = RunLoadbench(Args(Write("t.toml", text), {"--cleanup"}));
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  const auto runs = test::ReadRuns(out_);
  ASSERT_EQ(runs.size(), 3u) << Describe(r);  // every run was tried
  for (const auto& run : runs) {
    EXPECT_EQ(run["status"], "failed") << run.dump();
    EXPECT_TRUE(Contains(run["error"].get<std::string>(), "timed out")) << run.dump();
  }
  // --cleanup removes what this command generated, even when runs failed.
  EXPECT_TRUE(Contains(r.err, "removed")) << Describe(r);
  EXPECT_TRUE(fs::is_empty(data_));
}

// A worker the OOM killer kills under a memory limit is a failed run that says so, and the
// next strategy runs: fread's 256 MiB copy does not fit in 128 MiB; mmap maps the page cache,
// which the warm-up charged elsewhere, and needs little of its own (even under ASan).
TEST_F(ExperimentCliTest, AWorkerKilledByTheOomKillerIsRecordedAndTheRestRuns) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: memory cgroups need root";
  if (const std::string why = MemoryCgroupUnsupportedReason(); !why.empty()) GTEST_SKIP() << why;
  const std::string text = R"(# Question: does an OOM kill get recorded?
name = "oom"
reps = 1
cache = "warm"
memory_limit = "128MiB"
order = "grouped"

[[file]]
preset = "llama"
size = "256MiB"

[[strategy]]
name = "fread"
[[strategy]]
name = "mmap"
)";
  const ProcessResult r = RunLoadbench(Args(Write("oom.toml", text)));
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  const auto runs = test::ReadRuns(out_);
  ASSERT_EQ(runs.size(), 2u) << Describe(r);
  EXPECT_EQ(runs[0]["strategy"], "fread");
  EXPECT_EQ(runs[0]["status"], "failed") << runs[0].dump();
  EXPECT_TRUE(Contains(runs[0]["error"].get<std::string>(), "OOM killer")) << runs[0].dump();
  EXPECT_EQ(runs[0]["memory_limit_bytes"], 128u << 20);
  EXPECT_EQ(runs[1]["strategy"], "mmap");
  EXPECT_EQ(runs[1]["status"], "ok") << runs[1].dump();
  EXPECT_LE(runs[1]["memory"]["cgroup_peak_bytes"].get<uint64_t>(), (128u << 20) + (2u << 20));
}

}  // namespace
}  // namespace loadbench
