// The runner end to end: the built binary runs small generated files in worker processes and
// writes results that hold to the contract in docs/results-format.md.
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <linux/magic.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cache/cache.h"
#include "harness/gen/generator.h"
#include "harness/launch/request.h"
#include "tests/support/machine.h"
#include "tests/support/run_cli.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Under /var/tmp, not /tmp: a tmpfs /tmp cannot be made cold.
    char tmpl[] = "/var/tmp/loadbench_runner_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    GenOptions g;
    g.preset = "llama";
    g.size_bytes = 3u << 20;
    g.out_path = dir_ + "/model.wlf";
    g.seed = 11;
    GenResult r;
    Status s = Generate(g, &r);
    ASSERT_TRUE(s.ok()) << s.message();
    file_ = g.out_path;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A real safetensors file (it stores no checksum), copied into the test's folder.
  std::string CopyRealSafetensors() {
    const std::string file = dir_ + "/overall.safetensors";
    fs::copy_file(fs::path(LOADBENCH_SOURCE_DIR) /
                      "tests/real/st_safetensors-pr84_overall.safetensors",
                  file);
    return file;
  }

  // Runs the CLI; returns its exit code (or 128 + signal).
  int Run(const std::string& args) { return test::RunLoadbenchInto(dir_, args); }
  std::string Slurp(const std::string& name) { return test::ReadWholeFile(dir_ + "/" + name); }
  std::vector<nlohmann::json> Runs(const std::string& out) { return test::ReadRuns(out); }

  std::string dir_, file_;
};

TEST_F(RunnerTest, WarmRunsWriteEveryContractField) {
  const std::string out = dir_ + "/results";
  ASSERT_EQ(Run("run --file " + file_ +
                " --strategies fread:chunk=64KiB,mmap,mmap_seq --cache warm"
                " --reps 2 --experiment t --out " +
                out),
            0)
      << Slurp("stderr.txt");
  auto runs = Runs(out);
  ASSERT_EQ(runs.size(), 6u);
  const char* fields[] = {
      "run_id",          "experiment",     "strategy",     "params",       "file",
      "format",          "file_bytes",     "cache",        "rep",          "status",
      "error",           "checksum_ok",    "wall_s",       "ready_s",      "user_s",
      "sys_s",           "peak_rss_bytes", "major_faults", "minor_faults", "read_bytes",
      "resident_before", "resident_after", "counters"};
  std::set<std::string> ids;
  std::vector<std::string> order;
  for (const auto& r : runs) {
    for (const char* f : fields) EXPECT_TRUE(r.contains(f)) << f;
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r["checksum_ok"], true);
    EXPECT_EQ(r["experiment"], "t");
    EXPECT_EQ(r["cache"], "warm");
    EXPECT_EQ(r["format"], "wlf");
    EXPECT_GT(r["wall_s"].get<double>(), 0);
    EXPECT_GE(r["wall_s"].get<double>(), r["ready_s"].get<double>());
    EXPECT_GT(r["ready_s"].get<double>(), 0);
    EXPECT_GT(r["process_s"].get<double>(), r["wall_s"].get<double>());
    EXPECT_GT(r["peak_rss_bytes"].get<double>(), 0);
    EXPECT_GT(r["minor_faults"].get<double>(), 0);
    // The load's own counts: some, and fewer than the whole process's (exec, dynamic loading
    // and teardown fault too, and take CPU time).
    EXPECT_GT(r["load_minor_faults"].get<double>(), 0);
    EXPECT_LT(r["load_minor_faults"].get<double>(), r["minor_faults"].get<double>());
    EXPECT_LE(r["load_major_faults"].get<double>(), r["major_faults"].get<double>());
    EXPECT_LT(r["load_user_s"].get<double>() + r["load_sys_s"].get<double>(),
              r["user_s"].get<double>() + r["sys_s"].get<double>());
    EXPECT_GE(r["resident_before"].get<double>(), 0.99);
    // Read in once, or again (at most three times) where the cache lost part of it before the
    // check; a warm run has no drop.
    EXPECT_GE(r["warm_reads"].get<int>(), 1);
    EXPECT_LE(r["warm_reads"].get<int>(), 3);
    EXPECT_FALSE(r.contains("drop_method"));
    EXPECT_TRUE(r["counters"].is_object());
    EXPECT_TRUE(ids.insert(r["run_id"].get<std::string>()).second) << "run_id repeats";
    order.push_back(r["strategy"]);
  }
  // Each round runs every strategy once, and each run names the one made just before it.
  for (size_t round = 0; round < 2; ++round) {
    EXPECT_EQ(std::set<std::string>(order.begin() + 3 * round, order.begin() + 3 * round + 3),
              (std::set<std::string>{"fread", "mmap", "mmap_seq"}));
  }
  EXPECT_FALSE(runs[0].contains("after")) << runs[0].dump();
  for (size_t i = 1; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i]["after"], runs[i - 1]["strategy_spec"]) << runs[i].dump();
    EXPECT_EQ(runs[i]["position"], i % 3) << runs[i].dump();
  }
  const auto& fread = runs[std::find(order.begin(), order.end(), "fread") - order.begin()];
  EXPECT_EQ(fread["params"]["chunk"], 65536);
  EXPECT_EQ(fread["params"]["buffer"], "malloc");
  // fread copies every tensor into its own buffers, so its peak RSS is at least the data size.
  EXPECT_GE(fread["peak_rss_bytes"].get<double>(), fread["tensor_bytes"].get<double>());

  auto env = nlohmann::json::parse(Slurp("results/env.json"));
  for (const char* f : {"command_line", "kernel", "host", "storage", "filesystem", "thp",
                        "compiler", "loadbench", "cache_control", "file"}) {
    EXPECT_TRUE(env.contains(f)) << f;
  }
  const std::string table = Slurp("stdout.txt");
  for (const char* s : {"median_s", "warm  fread", "warm  mmap_seq", "2/2"}) {
    EXPECT_NE(table.find(s), std::string::npos) << s << "\n" << table;
  }
}

TEST_F(RunnerTest, ColdRunsStartNonResident) {
  if (const std::string why = test::CannotDropCachesReason(); !why.empty()) GTEST_SKIP() << why;
  struct statfs fs_info {};
  ASSERT_EQ(::statfs(dir_.c_str(), &fs_info), 0);
  if (fs_info.f_type == TMPFS_MAGIC) GTEST_SKIP() << dir_ << " is tmpfs: it cannot be made cold";
  const std::string out = dir_ + "/cold";
  ASSERT_EQ(
      Run("run --file " + file_ + " --strategies mmap,fread --cache cold --reps 1 --out " + out), 0)
      << Slurp("stderr.txt");
  for (const auto& r : Runs(out)) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_LE(r["resident_before"].get<double>(), 0.01);
    EXPECT_EQ(r["drop_method"], DropsWholeCache() ? "drop_caches" : "fadvise");
    EXPECT_FALSE(r.contains("warm_reads"));
    EXPECT_EQ(r["resident_after"].get<double>(), 1.0);
    // A cold load has to read the file from storage.
    EXPECT_GE(r["read_bytes"].get<double>(), r["tensor_bytes"].get<double>());
  }
}

// A file whose pages cannot leave memory (tmpfs: the page cache is the file) never gives a cold
// run: the gate records it invalid, with the figure it saw.
TEST_F(RunnerTest, AColdRunOnAFileThatCannotBeDroppedIsInvalid) {
  struct statfs shm {};
  if (::statfs("/dev/shm", &shm) != 0 || shm.f_type != TMPFS_MAGIC) {
    GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  }
  char tmpl[] = "/dev/shm/loadbench_runner_test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string shm_dir = tmpl;
  const std::string file = shm_dir + "/model.wlf";
  fs::copy_file(file_, file);
  const int code = Run("run --file " + file + " --strategies mmap --cache cold --reps 1 --out " +
                       dir_ + "/tmpfs");
  std::error_code ec;
  fs::remove_all(shm_dir, ec);
  EXPECT_EQ(code, 1) << Slurp("stderr.txt");
  const auto runs = Runs(dir_ + "/tmpfs");
  ASSERT_EQ(runs.size(), 1u) << Slurp("stderr.txt");
  EXPECT_EQ(runs[0]["status"], "invalid") << runs[0].dump();
  EXPECT_EQ(runs[0]["error"], "cold run started 100.0% resident (limit 1%)") << runs[0].dump();
  EXPECT_EQ(runs[0]["resident_before"], 1.0) << runs[0].dump();
}

TEST_F(RunnerTest, RefusesAFolderThatHoldsRuns) {
  const std::string out = dir_ + "/again";
  ASSERT_EQ(Run("run --file " + file_ + " --strategies mmap --cache warm --reps 1 --out " + out),
            0);
  EXPECT_EQ(Run("run --file " + file_ + " --strategies mmap --cache warm --reps 1 --out " + out),
            2);
  EXPECT_NE(Slurp("stderr.txt").find("already holds results"), std::string::npos);
  EXPECT_EQ(Runs(out).size(), 1u);
}

TEST_F(RunnerTest, ACorruptedTensorFailsTheChecksum) {
  // Flip one byte inside the last tensor: the header stays valid, the data does not.
  {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-64, std::ios::end);
    char c;
    f.get(c);
    f.seekp(-64, std::ios::end);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  const std::string out = dir_ + "/bad";
  EXPECT_EQ(Run("run --file " + file_ + " --strategies fread,mmap --cache warm --reps 1 --out " +
                out),
            1);
  for (const auto& r : Runs(out)) {
    EXPECT_EQ(r["status"], "failed");
    EXPECT_EQ(r["checksum_ok"], false);
    EXPECT_NE(r["error"].get<std::string>().find("checksum mismatch"), std::string::npos);
  }
}

// Safetensors and GGUF files from other tools store no checksum: the runner reads the file once
// for a reference, and every run is checked against it.
TEST_F(RunnerTest, AFileWithoutAStoredChecksumIsCheckedAgainstAReferenceRead) {
  const std::string file = CopyRealSafetensors();
  const std::string out = dir_ + "/results";
  ASSERT_EQ(Run("run --file " + file +
                " --strategies fread,mmap,odirect --cache warm --reps 1"
                " --sample-ms 0 --out " +
                out),
            0)
      << Slurp("stderr.txt");
  std::ifstream env_in(out + "/env.json");
  const nlohmann::json env = nlohmann::json::parse(env_in);
  EXPECT_EQ(env["file"]["format"], "safetensors");
  EXPECT_NE(env["file"]["checksum_source"].get<std::string>().find("reference read"),
            std::string::npos)
      << env["file"].dump();
  const auto runs = Runs(out);
  ASSERT_EQ(runs.size(), 3u);
  for (const auto& r : runs) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r["checksum_ok"], true) << r.dump();
    EXPECT_EQ(r["checksum"], env["file"]["checksum"]) << r.dump();
  }
}

TEST_F(RunnerTest, ALoadThatDisagreesWithTheReferenceIsAFailedRun) {
  const std::string file = CopyRealSafetensors();
  WorkerRequest w;
  w.file = file;
  ASSERT_TRUE(ResolveSpec(StrategySpec{"mmap", {}, "mmap"}, &w.strategy).ok());
  w.expect_checksum = 0x0123456789abcdefull;
  const test::ProcessResult p = test::RunLoadbench({"worker", "--request", RequestJson(w).dump()});
  ASSERT_EQ(p.exit_code, 0) << test::Describe(p);
  const nlohmann::json r = nlohmann::json::parse(p.out);
  EXPECT_EQ(r["status"], "failed") << r.dump();
  EXPECT_EQ(r["checksum_ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find(
                "the reference read of the file gives 0123456789abcdef"),
            std::string::npos)
      << r.dump();
}

}  // namespace
}  // namespace loadbench
