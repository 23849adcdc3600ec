// The shm strategy under the runner: cold runs start without a segment and create it, warm runs
// attach to it, and no segment outlives the run, however the runs ended.
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <linux/magic.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/gen/generator.h"
#include "loaders/strategies/shm.h"
#include "tests/support/run_cli.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

bool DevShmHas(const std::string& segment) {
  struct stat st {};
  return ::stat(("/dev/shm/" + segment).c_str(), &st) == 0;
}

class ShmRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    // Under /var/tmp, not /tmp: a tmpfs /tmp cannot be made cold.
    char tmpl[] = "/var/tmp/loadbench_shm_runner_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    struct statfs fs_info {};
    ASSERT_EQ(::statfs(dir_.c_str(), &fs_info), 0);
    if (fs_info.f_type == TMPFS_MAGIC) GTEST_SKIP() << dir_ << " is tmpfs: it cannot be made cold";
    GenOptions g;
    g.preset = "llama";
    g.size_bytes = 3u << 20;
    g.out_path = dir_ + "/model.wlf";
    g.seed = 12;
    GenResult r;
    Status s = Generate(g, &r);
    ASSERT_TRUE(s.ok()) << s.message();
    file_ = g.out_path;
    s = ShmSegmentName(file_, &segment_);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(RemoveShmSegment(file_).ok());  // one a crashed earlier test left
  }
  void TearDown() override {
    // Should the runner leave the segment, the test fails, but /dev/shm is still cleaned.
    if (!file_.empty()) (void)RemoveShmSegment(file_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs the CLI; returns its exit code (or 128 + signal).
  int Run(const std::string& args) { return test::RunLoadbenchInto(dir_, args); }
  std::string Slurp(const std::string& name) { return test::ReadWholeFile(dir_ + "/" + name); }
  std::vector<nlohmann::json> Runs(const std::string& out) { return test::ReadRuns(out); }

  std::string dir_, file_, segment_;
};

TEST_F(ShmRunner, EveryRunCreatesItsOwnSegmentAndNoSegmentRemains) {
  const std::string out = dir_ + "/results";
  ASSERT_EQ(Run("run --file " + file_ + " --strategies shm --cache both --reps 2 --out " + out), 0)
      << Slurp("stderr.txt");
  const auto runs = Runs(out);
  ASSERT_EQ(runs.size(), 4u);
  std::vector<std::string> caches;
  for (const auto& r : runs) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r["checksum_ok"], true) << r.dump();
    ASSERT_TRUE(r["details"].is_object()) << r.dump();
    // Every run is a creator: the runner removes the segment after each run, so that no run
    // (a warm one of shm included) is measured beside the last one's 2 GiB of shared memory.
    EXPECT_EQ(r["details"]["role"], "creator") << r.dump();
    EXPECT_EQ(r["details"]["segment"], segment_) << r.dump();
    caches.push_back(r["cache"]);
  }
  EXPECT_EQ(caches, (std::vector<std::string>{"cold", "warm", "cold", "warm"}));
  EXPECT_FALSE(DevShmHas(segment_)) << "/dev/shm/" << segment_ << " outlived the run";
}

TEST_F(ShmRunner, NoSegmentRemainsAfterAFailedRun) {
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
  EXPECT_EQ(Run("run --file " + file_ + " --strategies shm --cache warm --reps 1 --out " + out), 1)
      << Slurp("stderr.txt");
  const auto runs = Runs(out);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["status"], "failed");
  EXPECT_EQ(runs[0]["checksum_ok"], false);
  // The run got as far as filling the segment before its checksum failed.
  EXPECT_EQ(runs[0]["details"]["role"], "creator") << runs[0].dump();
  EXPECT_FALSE(DevShmHas(segment_)) << "/dev/shm/" << segment_ << " outlived the failed run";
}

}  // namespace
}  // namespace loadbench
