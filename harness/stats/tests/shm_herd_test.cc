// A herd whose readers have roles (shm's creator and attacher), from the fixture the analysis
// is tested on too (analysis/tests/fixtures/shm-herd): the pairing splits the roles as the
// report does, figure for figure, and the many-readers table has every reader of a round in it.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/stats/comparison.h"
#include "harness/stats/summary.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
const std::string kFixture = LOADBENCH_SOURCE_DIR "/analysis/tests/fixtures/shm-herd";

std::vector<Json> Records() {
  std::ifstream in(kFixture + "/runs.jsonl");
  std::vector<Json> out;
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

TEST(ShmHerd, EachRoleIsPairedAsTheAnalysisPairsIt) {
  const std::vector<Json> records = Records();
  ASSERT_EQ(records.size(), 24u);
  std::ifstream in(kFixture + "/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in)["expected"];
  const RoundsVerdict v = CompareWithBaseline(records, "fread", 0);
  ASSERT_EQ(v.comparisons.size(), 2u);
  for (const Comparison& c : v.comparisons) {
    const std::string name = MarkedSpec(c);
    SCOPED_TRACE(name);
    ASSERT_TRUE(expected.contains(name));
    const auto& want = expected[name];
    EXPECT_EQ(c.n, want["n"].get<int>());
    EXPECT_NEAR(c.ratio, want["ratio"].get<double>(), 1e-9);
    EXPECT_NEAR(c.low, want["low"].get<double>(), 1e-9);
    EXPECT_NEAR(c.high, want["high"].get<double>(), 1e-9);
  }
}

TEST(ShmHerd, ARoundHoldsEveryReaderWhateverItsRole) {
  const std::string table = ReadersTable(Records());
  EXPECT_EQ(table.find("no duration"), std::string::npos) << table;
  EXPECT_EQ(table.find(": no record"), std::string::npos) << table;
  EXPECT_NE(table.find("warm  shm x2                     6/6"), std::string::npos) << table;
  EXPECT_NE(table.find("warm  fread x2                   6/6"), std::string::npos) << table;
}

}  // namespace
}  // namespace loadbench
