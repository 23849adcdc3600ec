// The messages of an MPI job: how a rank's answer differs from what rank 0 asked, in one line;
// and the run message, which carries no secret of rank 0's.
#include "harness/launch/ranks.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "harness/net/server.h"
#include "tests/support/saved_env.h"

namespace loadbench {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

PreparedFile File(const std::string& path, uint64_t bytes, uint64_t checksum) {
  PreparedFile f;
  f.path = path;
  f.table.file_size = bytes;
  f.table.expected_checksum = checksum;
  return f;
}

// Rank 0's check of two files, and an answer that agrees with it.
class RankDifferenceTest : public ::testing::Test {
 protected:
  RankDifferenceTest()
      : check_(CheckMessage(
            {File("/models/a.wlf", 1000, 0xabc), File("/models/b.wlf", 2000, 0xdef)})) {
    answer_ = {{"version", check_["version"]}, {"files", RankJson::array()}};
    for (const RankJson& f : check_["files"]) {
      answer_["files"].push_back({{"bytes", f["bytes"]}, {"checksum", f["checksum"]}});
    }
  }
  std::string Difference() const { return RankDifference(3, "node7", check_, answer_); }

  RankJson check_, answer_;
};

TEST_F(RankDifferenceTest, TheSameAnswerIsNoDifference) {
  EXPECT_EQ(check_["type"], "check");
  EXPECT_EQ(check_["files"][1]["checksum"], "0000000000000def");
  EXPECT_EQ(Difference(), "");
}

TEST_F(RankDifferenceTest, AnotherVersionNamesTheRankTheHostAndBothVersions) {
  answer_["version"] = "0.0.1 (deadbeef)";
  const std::string d = Difference();
  EXPECT_TRUE(Has(d, "rank 3 (host node7)")) << d;
  EXPECT_TRUE(Has(d, "0.0.1 (deadbeef)")) << d;
  EXPECT_TRUE(Has(d, check_["version"].get<std::string>())) << d;
}

TEST_F(RankDifferenceTest, AFileTheRankCannotReadGivesItsError) {
  answer_["files"][1] = {{"error", "/models/b.wlf: No such file or directory"}};
  const std::string d = Difference();
  EXPECT_TRUE(Has(d, "rank 3 (host node7)")) << d;
  EXPECT_TRUE(Has(d, "/models/b.wlf: No such file or directory")) << d;
}

TEST_F(RankDifferenceTest, AnotherSizeOrChecksumNamesThePathAndBothFigures) {
  answer_["files"][1]["bytes"] = 1999;
  std::string d = Difference();
  EXPECT_TRUE(Has(d, "rank 3 (host node7)")) << d;
  EXPECT_TRUE(Has(d, "/models/b.wlf")) << d;
  EXPECT_FALSE(Has(d, "/models/a.wlf")) << d;
  EXPECT_TRUE(Has(d, "1999 bytes")) << d;
  EXPECT_TRUE(Has(d, "2000 bytes")) << d;

  answer_["files"][1]["bytes"] = 2000;
  answer_["files"][0]["checksum"] = "0000000000000abd";
  d = Difference();
  EXPECT_TRUE(Has(d, "/models/a.wlf")) << d;
  EXPECT_TRUE(Has(d, "0000000000000abd")) << d;
  EXPECT_TRUE(Has(d, "0000000000000abc")) << d;
}

// Rank 0's remote environment, with marker credentials, set for one test and restored afterwards.
class RunMessageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("AWS_ENDPOINT_URL", "https://store.example:9000", 1);
    ::setenv("AWS_ACCESS_KEY_ID", "AKIAMARKERKEYID", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "marker-secret-key", 1);
    ::setenv("AWS_SESSION_TOKEN", "marker-session-token", 1);
  }

 private:
  test::SavedEnv saved_{{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
                         "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "LOADBENCH_S3_ADDRESSING"}};
};

TEST_F(RunMessageTest, CarriesNoSecret) {
  LaunchRequest req;
  req.worker.file = "s3://models/m.wlf";
  ASSERT_TRUE(
      ResolveSpec(StrategySpec{"http_ranges", {}, "http_ranges"}, &req.worker.strategy).ok());
  const RankJson message = RunMessage(req);
  const std::string m = message.dump();
  EXPECT_FALSE(Has(m, "marker-secret-key")) << m;
  EXPECT_FALSE(Has(m, "marker-session-token")) << m;
  EXPECT_FALSE(Has(m, "AWS_SECRET_ACCESS_KEY")) << m;
  EXPECT_FALSE(Has(m, "AWS_SESSION_TOKEN")) << m;
  // Another rank keeps the credentials it was started with.
  ::setenv("AWS_SECRET_ACCESS_KEY", "the-rank's-own", 1);
  ::unsetenv("AWS_SESSION_TOKEN");
  LaunchRequest back;
  ASSERT_TRUE(RequestOf(message, "loadbench", &back).ok());
  EXPECT_EQ(back.worker.file, "s3://models/m.wlf");
  EXPECT_EQ(back.worker.strategy.info, req.worker.strategy.info);
  EXPECT_STREQ(std::getenv("AWS_SECRET_ACCESS_KEY"), "the-rank's-own");
  EXPECT_EQ(std::getenv("AWS_SESSION_TOKEN"), nullptr);
}

TEST_F(RunMessageTest, NamesTheExperimentsS3rverWhoseKeysEachRankSetsItself) {
  LaunchRequest req;
  req.worker.file = "s3://loadbench/m.wlf";
  req.s3rver = "http://127.0.0.1:4568";
  const RankJson message = RunMessage(req);
  EXPECT_FALSE(Has(message.dump(), "marker-secret-key")) << message.dump();
  EXPECT_EQ(message["s3rver"], "http://127.0.0.1:4568");
  LaunchRequest back;
  ASSERT_TRUE(RequestOf(message, "loadbench", &back).ok());
  EXPECT_EQ(back.s3rver, "http://127.0.0.1:4568");
  EXPECT_STREQ(std::getenv("AWS_ENDPOINT_URL"), "http://127.0.0.1:4568");
  EXPECT_STREQ(std::getenv("AWS_ACCESS_KEY_ID"), kS3rverKey);
  EXPECT_STREQ(std::getenv("AWS_SECRET_ACCESS_KEY"), kS3rverKey);
  EXPECT_STREQ(std::getenv("LOADBENCH_S3_ADDRESSING"), "path");
  EXPECT_EQ(std::getenv("AWS_SESSION_TOKEN"), nullptr);
}

TEST_F(RunMessageTest, CarriesAnExecRunsCommandAndWhatEachReaderNeeds) {
  LaunchRequest req;
  req.worker.file = "/models/m.wlf";
  ASSERT_TRUE(
      ResolveSpec(StrategySpec{"http_ranges", {}, "http_ranges"}, &req.worker.strategy).ok());
  req.readers = 2;
  req.part_checksums = {1, 2};
  req.part_bytes = {100, 200};
  req.model_bytes = 300;
  req.nic_counters = true;
  req.program = "/usr/bin/python3";
  req.argv = {"python3", "torch_fleet.py", "--design", "bcast", "/models/m.wlf"};
  req.timed = "region";
  LaunchRequest back;
  ASSERT_TRUE(RequestOf(RunMessage(req), "loadbench", &back).ok());
  EXPECT_EQ(back.program, req.program);
  EXPECT_EQ(back.argv, req.argv);
  EXPECT_EQ(back.timed, "region");
  EXPECT_EQ(back.part_checksums, req.part_checksums);
  EXPECT_EQ(back.part_bytes, req.part_bytes);
  EXPECT_EQ(back.model_bytes, 300u);
  EXPECT_TRUE(back.nic_counters);

  // A worker's run carries no command; a broken exec message is never read as a worker's.
  req.program.clear();
  req.argv.clear();
  LaunchRequest worker;
  ASSERT_TRUE(RequestOf(RunMessage(req), "loadbench", &worker).ok());
  EXPECT_TRUE(worker.program.empty());
  RankJson broken = RunMessage(req);
  broken["exec"] = {{"timed", "command"}};
  LaunchRequest bad;
  EXPECT_EQ(RequestOf(broken, "loadbench", &bad).message(),
            "run message: an exec run without its program or argv");
  EXPECT_FALSE(bad.program.empty());
}

}  // namespace
}  // namespace loadbench
