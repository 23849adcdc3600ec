// The check of an MPI job: how a rank's answer differs from what rank 0 asked, in one line.
#include "harness/launch/ranks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace loadbench
