#include "harness/stats/paired_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loadbench::paired {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> Normals(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, 0.1);
  std::vector<double> v(n);
  for (double& x : v) x = normal(gen);
  return v;
}

std::vector<double> SortedWalsh(const std::vector<double>& d) {
  std::vector<double> w;
  for (size_t i = 0; i < d.size(); ++i) {
    for (size_t j = i; j < d.size(); ++j) w.push_back((d[i] + d[j]) / 2);
  }
  std::sort(w.begin(), w.end());
  return w;
}

// Whether `value` is the k-th smallest (1-indexed) Walsh average of d, ties allowed.
bool IsWalshOrderStatistic(const std::vector<double>& d, size_t k, double value) {
  size_t below = 0, at_or_below = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    for (size_t j = i; j < d.size(); ++j) {
      const double w = (d[i] + d[j]) / 2;
      below += w < value;
      at_or_below += w <= value;
    }
  }
  return below < k && k <= at_or_below;
}

void ExpectUnbounded(const Interval& i) {
  EXPECT_FALSE(i.bounded);
  EXPECT_EQ(i.low, -kInf);
  EXPECT_EQ(i.high, kInf);
  EXPECT_TRUE(std::isnan(i.level));
}

TEST(PairedStatsInterval, TenRoundsUseTheNinthWalshAverage) {
  // Powers of two make every Walsh average distinct and easy to order by hand: the 9th
  // smallest sum 2^i + 2^j is 4 + 8, the 9th largest 512 + 2.
  std::vector<double> d;
  for (int i = 0; i < 10; ++i) d.push_back(std::ldexp(1.0, i));
  const Interval i = SignedRankInterval(d);
  EXPECT_EQ(i.n, 10);
  EXPECT_TRUE(i.bounded);
  EXPECT_DOUBLE_EQ(i.low, 6.0);
  EXPECT_DOUBLE_EQ(i.high, 257.0);
  EXPECT_DOUBLE_EQ(i.level, 50.0 / 1024);  // 2 P(T+ <= 8) = 2 * 25 / 2^10 = 0.0488...
}

TEST(PairedStatsInterval, SixRoundsSpanTheSample) {
  // k = 1: the extreme Walsh averages, which are the smallest and largest d.
  const Interval i = SignedRankInterval({0.12, 0.08, -0.03, 0.15, 0.09, 0.2});
  EXPECT_TRUE(i.bounded);
  EXPECT_DOUBLE_EQ(i.low, -0.03);
  EXPECT_DOUBLE_EQ(i.high, 0.2);
  EXPECT_DOUBLE_EQ(i.level, 0.03125);
}

TEST(PairedStatsInterval, UnboundedUpToFiveRounds) {
  for (size_t n = 1; n <= 5; ++n) {
    const Interval i = SignedRankInterval(Normals(n, 7));
    EXPECT_EQ(i.n, static_cast<int>(n));
    EXPECT_TRUE(std::isfinite(i.estimate)) << n;
    ExpectUnbounded(i);
  }
  const Interval empty = SignedRankInterval({});
  EXPECT_EQ(empty.n, 0);
  EXPECT_TRUE(std::isnan(empty.estimate));
  ExpectUnbounded(empty);
}

TEST(PairedStatsInterval, MatchesBruteForceEnumeration) {
  for (size_t n = 1; n <= 12; ++n) {
    // The null distribution of T+ from all 2^n sign patterns, counted.
    std::vector<uint64_t> count(n * (n + 1) / 2 + 1, 0);
    for (uint32_t pattern = 0; pattern < (1u << n); ++pattern) {
      size_t t_plus = 0;
      for (size_t bit = 0; bit < n; ++bit) t_plus += ((pattern >> bit) & 1) ? bit + 1 : 0;
      ++count[t_plus];
    }
    const double total = std::ldexp(1.0, static_cast<int>(n));
    size_t k = 0;
    uint64_t cumulative = 0, at_t_star = 0;
    for (size_t t = 0; t < count.size(); ++t) {
      cumulative += count[t];
      if (cumulative / total > kAlpha / 2) break;
      k = t + 1;
      at_t_star = cumulative;
    }

    const std::vector<double> d = Normals(n, 100 + static_cast<uint32_t>(n));
    const Interval i = SignedRankInterval(d);
    SCOPED_TRACE("n = " + std::to_string(n));
    if (k == 0) {
      ExpectUnbounded(i);
      continue;
    }
    const std::vector<double> w = SortedWalsh(d);
    EXPECT_TRUE(i.bounded);
    EXPECT_EQ(i.low, w[k - 1]);
    EXPECT_EQ(i.high, w[w.size() - k]);
    EXPECT_DOUBLE_EQ(i.level, 2 * static_cast<double>(at_t_star) / total);
  }
}

TEST(PairedStatsInterval, FiveHundredRounds) {
  // k = 56291 and the level from the exact integer counts (Python big integers).
  const std::vector<double> d = Normals(500, 3);
  const Interval i = SignedRankInterval(d);
  EXPECT_TRUE(i.bounded);
  const size_t m = 500 * 501 / 2;
  EXPECT_TRUE(IsWalshOrderStatistic(d, 56291, i.low));
  EXPECT_TRUE(IsWalshOrderStatistic(d, m + 1 - 56291, i.high));
  EXPECT_NEAR(i.level, 0.049968977407157306, 1e-12);
}

TEST(PairedStatsInterval, HodgesLehmannOfKnownVectors) {
  // Walsh averages of {0, 1, 5}: 0, 0.5, 1, 2.5, 3, 5.
  EXPECT_DOUBLE_EQ(SignedRankInterval({0, 1, 5}).estimate, 1.75);
  // Of {0, 4}: 0, 2, 4.
  EXPECT_DOUBLE_EQ(SignedRankInterval({4, 0}).estimate, 2.0);
  EXPECT_DOUBLE_EQ(SignedRankInterval({-0.3}).estimate, -0.3);
  // A wild value moves the estimate by one Walsh average, not by its size.
  EXPECT_DOUBLE_EQ(SignedRankInterval({0, 1, 2, 3, 1000}).estimate, 2.0);
}

TEST(PairedStatsSignificant, ShiftedDataIs) {
  std::vector<double> d = Normals(12, 11);
  for (double& x : d) x = 0.5 + x / 10;
  const Interval up = SignedRankInterval(d);
  EXPECT_GT(up.low, 0);
  EXPECT_TRUE(Significant(up));
  for (double& x : d) x = -x;
  EXPECT_TRUE(Significant(SignedRankInterval(d)));
}

TEST(PairedStatsSignificant, SymmetricDataIsNot) {
  const Interval i = SignedRankInterval({-0.5, -0.4, -0.3, -0.2, -0.1, 0.1, 0.2, 0.3, 0.4, 0.5});
  EXPECT_DOUBLE_EQ(i.estimate, 0.0);
  EXPECT_TRUE(i.bounded);
  EXPECT_FALSE(Significant(i));
}

TEST(PairedStatsSignificant, UnboundedIsNot) {
  EXPECT_FALSE(Significant(SignedRankInterval({1, 1.1, 1.2, 1.3, 1.4})));
}

TEST(PairedStatsSignificant, IntervalEndingAtZeroIsNot) {
  // Ties at zero put W_(k) exactly at 0; the test rejects only when 0 is outside.
  const Interval i = SignedRankInterval({0.05, 0.05, 0.0, 0.12, -0.03, 0.05, 0.08, 0.0, 0.12});
  EXPECT_EQ(i.low, 0.0);
  EXPECT_FALSE(Significant(i));
}

TEST(PairedStatsHalfWidth, KnownValues) {
  const std::vector<double> d = {-0.2, -0.1, -0.05, 0.05, 0.1, 0.2};
  const Interval i = SignedRankInterval(d);
  ASSERT_DOUBLE_EQ(i.estimate, 0.0);
  // [-0.2, 0.2] around 0: the upper side reaches further on the ratio scale.
  EXPECT_NEAR(HalfWidth(i), std::exp(0.2) - 1, 1e-12);

  // Moving every d moves the interval with it: the relative half width stays.
  std::vector<double> shifted = d;
  for (double& x : shifted) x += 0.7;
  EXPECT_NEAR(HalfWidth(SignedRankInterval(shifted)), std::exp(0.2) - 1, 1e-12);

  Interval lopsided;
  lopsided.bounded = true;
  lopsided.estimate = 0.1;
  lopsided.low = -0.5;
  lopsided.high = 0.15;
  EXPECT_NEAR(HalfWidth(lopsided), 1 - std::exp(-0.6), 1e-12);

  EXPECT_EQ(HalfWidth(SignedRankInterval({0.1, 0.2})), kInf);
}

TEST(PairedStatsKendall, MonotoneSeries) {
  std::vector<double> y;
  for (int i = 0; i < 10; ++i) y.push_back(2.5 + 0.1 * i);
  Trend t = KendallTrend(y);
  EXPECT_EQ(t.n, 10);
  EXPECT_DOUBLE_EQ(t.tau, 1.0);
  EXPECT_DOUBLE_EQ(t.z, 45 / std::sqrt(125.0));  // S = 45, var(S) = 10 * 9 * 25 / 18
  EXPECT_LT(t.p, 1e-3);
  std::reverse(y.begin(), y.end());
  t = KendallTrend(y);
  EXPECT_DOUBLE_EQ(t.tau, -1.0);
  EXPECT_DOUBLE_EQ(t.z, -45 / std::sqrt(125.0));
  EXPECT_LT(t.p, 1e-3);
}

TEST(PairedStatsKendall, ConstantSeriesHasNoTrend) {
  const Trend t = KendallTrend({1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5});
  EXPECT_EQ(t.n, 7);
  EXPECT_TRUE(std::isnan(t.tau));
  EXPECT_TRUE(std::isnan(t.z));
  EXPECT_TRUE(std::isnan(t.p));
  EXPECT_FALSE(t.p < 0.05);
}

TEST(PairedStatsKendall, ShortSeriesIsNaN) {
  for (const std::vector<double>& y : {std::vector<double>{}, {1.0}, {1.0, 2.0}}) {
    const Trend t = KendallTrend(y);
    EXPECT_EQ(t.n, static_cast<int>(y.size()));
    EXPECT_TRUE(std::isnan(t.tau) && std::isnan(t.z) && std::isnan(t.p));
  }
}

TEST(PairedStatsKendall, TiedSeriesAgreesWithScipy) {
  // scipy 1.10: kendalltau(range(11), y, method="asymptotic").
  const Trend t = KendallTrend({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5});
  EXPECT_NEAR(t.tau, 0.30510802855858954, 1e-12);
  EXPECT_NEAR(t.p, 0.20495706812150782, 1e-12);
  EXPECT_GT(t.z, 0);
}

TEST(PairedStatsOutliers, FlagsOnlyThePlantedOutlier) {
  const std::vector<double> x = {0.51, 0.49, 0.53, 0.50, 0.52, 0.48, 1.35, 0.50};
  const std::vector<bool> flags = MadOutliers(x);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(flags[i], i == 6) << i;
}

TEST(PairedStatsOutliers, ModifiedZOfKnownVector) {
  // Median 3, absolute deviations {2, 1, 0, 1, 7}, MAD 1.
  const std::vector<double> z = ModifiedZ({1, 2, 3, 4, 10});
  const std::vector<double> expected = {-1.349, -0.6745, 0, 0.6745, 4.7215};
  ASSERT_EQ(z.size(), expected.size());
  for (size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(z[i], expected[i], 1e-12) << i;
  EXPECT_EQ(MadOutliers({1, 2, 3, 4, 10}), (std::vector<bool>{false, false, false, false, true}));
}

TEST(PairedStatsOutliers, TooFewValuesFlagNothing) {
  const std::vector<double> x = {1, 2, 3, 10};
  EXPECT_EQ(MadOutliers(x), std::vector<bool>(4, false));
  // The same values pass once min_n allows them.
  EXPECT_EQ(MadOutliers(x, 3.5, 4), (std::vector<bool>{false, false, false, true}));
}

TEST(PairedStatsOutliers, ZeroMadFlagsNothing) {
  const std::vector<double> x = {0.5, 0.5, 0.5, 0.5, 0.5, 0.9};
  EXPECT_EQ(ModifiedZ(x), std::vector<double>(6, 0.0));
  EXPECT_EQ(MadOutliers(x), std::vector<bool>(6, false));
}

TEST(PairedStatsMedian, OddEvenEmpty) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7}), 7.0);
  EXPECT_TRUE(std::isnan(Median({})));
}

// The figures analysis/paired.py is tested against too, so that the harness and the report
// agree; written by analysis/tests/fixtures/make_paired_stats.py by other routes (enumerated
// sign patterns, scipy).
class PairedStatsFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in(LOADBENCH_SOURCE_DIR "/analysis/tests/fixtures/paired_stats.json");
    ASSERT_TRUE(in.good());
    fixture_ = nlohmann::json::parse(in);
  }
  static nlohmann::json fixture_;
};
nlohmann::json PairedStatsFixture::fixture_;

// Relative tolerance 1e-9, with a floor for figures that are exactly 0.
::testing::AssertionResult Near(double actual, const nlohmann::json& expected) {
  const double e = expected.get<double>();
  if (std::abs(actual - e) <= 1e-9 * std::abs(e) + 1e-15) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << actual << " != " << e;
}

TEST_F(PairedStatsFixture, Intervals) {
  ASSERT_GE(fixture_["intervals"].size(), 8u);
  for (const auto& c : fixture_["intervals"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto& want = c["interval"];
    const Interval got = SignedRankInterval(c["d"].get<std::vector<double>>());
    EXPECT_EQ(got.n, want["n"].get<int>());
    EXPECT_TRUE(Near(got.estimate, want["estimate"]));
    EXPECT_EQ(got.bounded, want["bounded"].get<bool>());
    if (want["bounded"].get<bool>()) {
      EXPECT_TRUE(Near(got.low, want["low"]));
      EXPECT_TRUE(Near(got.high, want["high"]));
      EXPECT_TRUE(Near(got.level, want["level"]));
    } else {
      EXPECT_TRUE(want["low"].is_null() && want["high"].is_null() && want["level"].is_null());
      ExpectUnbounded(got);
    }
  }
}

TEST_F(PairedStatsFixture, Kendall) {
  ASSERT_FALSE(fixture_["kendall"].empty());
  for (const auto& c : fixture_["kendall"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto y = c["y"].get<std::vector<double>>();
    const Trend got = KendallTrend(y);
    EXPECT_EQ(got.n, static_cast<int>(y.size()));
    EXPECT_TRUE(Near(got.tau, c["tau"]));
    EXPECT_TRUE(Near(got.z, c["z"]));
    EXPECT_TRUE(Near(got.p, c["p"]));
  }
}

TEST_F(PairedStatsFixture, Outliers) {
  ASSERT_FALSE(fixture_["outliers"].empty());
  for (const auto& c : fixture_["outliers"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    EXPECT_EQ(MadOutliers(c["x"].get<std::vector<double>>()), c["flags"].get<std::vector<bool>>());
  }
}

}  // namespace
}  // namespace loadbench::paired
