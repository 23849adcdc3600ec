// Ratio texts against analysis/tests/fixtures/ratio_text.json, written by hand, which the
// analysis's ratio_text is tested against too: the console and the report print one text.
#include "harness/stats/ratio_text.h"

#include <fstream>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/stats/paired_stats.h"

namespace loadbench {
namespace {

nlohmann::json Fixture() {
  std::ifstream in(LOADBENCH_SOURCE_DIR "/analysis/tests/fixtures/ratio_text.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

// An end as the fixture writes it: a number, null (none) or "inf".
double End(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  return std::numeric_limits<double>::infinity();
}

TEST(RatioText, NumbersAsTheFixtureWritesThem) {
  const nlohmann::json f = Fixture();
  ASSERT_GE(f["numbers"].size(), 10u);
  for (const auto& c : f["numbers"]) {
    EXPECT_EQ(RatioFigure(c[0].get<double>()), c[1].get<std::string>()) << c.dump();
  }
}

TEST(RatioText, IntervalsRoundOutwardAndNeverToOne) {
  const nlohmann::json f = Fixture();
  ASSERT_GE(f["ratios"].size(), 14u);
  for (const auto& c : f["ratios"]) {
    EXPECT_EQ(RatioText(c[0].get<double>(), End(c[1]), End(c[2])), c[3].get<std::string>())
        << c.dump();
  }
}

// 6 rounds: the exact interval is [W_(1), W_(21)], of level 2/64: 96.875% covered.
TEST(RatioText, TheExactLevelWhereItIsNot95) {
  EXPECT_EQ(LevelText(paired::SignedRankInterval({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}).level), "96.9%");
  EXPECT_EQ(LevelText(2.0 / 64), "96.9%");
  EXPECT_EQ(LevelText(0.0498), "95%");
  EXPECT_EQ(LevelText(0.0469), "95.3%");
}

}  // namespace
}  // namespace loadbench
