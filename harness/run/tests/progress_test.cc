// The time left shown on the progress line and recorded at a tenth of the runs.
#include "harness/run/progress.h"

#include <gtest/gtest.h>

namespace loadbench {
namespace {

// Two strategies, cold then warm, two rounds: the warm runs come after every cold one.
std::vector<Eta::Item> Plan(double estimate) {
  std::vector<Eta::Item> items;
  for (int rep = 0; rep < 2; ++rep) {
    for (const char* cache : {"cold", "warm"}) {
      for (const char* s : {"fread", "mmap"}) {
        items.push_back({s, cache, estimate});
      }
    }
  }
  return items;
}

TEST(Eta, NothingToGoOnIsUnknown) {
  const Eta eta(Plan(0));
  EXPECT_FALSE(eta.Seconds(0).has_value());
  EXPECT_EQ(eta.Left(0), "unknown");
}

TEST(Eta, BeforeAnyRunTheEstimatesAreMarkedAsSuch) {
  const Eta eta(Plan(10));
  EXPECT_DOUBLE_EQ(*eta.Seconds(0), 80);
  EXPECT_EQ(eta.Left(0), "~1 min 20 s (estimate)");
}

// A combination measured counts what it took on average.
TEST(Eta, MeasuredCombinationsCountTheirMean) {
  Eta eta(Plan(0));
  for (size_t i = 0; i < 4; ++i) eta.Done(i, i == 0 ? 10 : i == 1 ? 1 : i == 2 ? 8 : 2);
  EXPECT_DOUBLE_EQ(*eta.Seconds(4), 10 + 1 + 8 + 2);
  EXPECT_EQ(eta.Left(4), "21 s");
  eta.Done(4, 12);  // fread cold again: its mean is now 11
  EXPECT_DOUBLE_EQ(*eta.Seconds(5), 1 + 8 + 2);
  EXPECT_DOUBLE_EQ(*eta.Seconds(4), 11 + 1 + 8 + 2);
}

// One not measured yet: its strategy in the other cache state, times how the two states compare
// for the strategies measured in both, shrunk towards 1 as if 1 were one strategy more; not the
// mean of every run so far.
TEST(Eta, TheSameStrategyInAnotherConditionScaled) {
  std::vector<Eta::Item> items;
  for (const char* cache : {"cold", "warm"}) {
    for (const char* s : {"a", "b", "c", "d"}) items.push_back({s, cache, 0});
  }
  Eta eta(items);
  for (size_t i = 0; i < 4; ++i) eta.Done(i, 10);  // every strategy cold: 10 s
  // Nothing measured warm: warm is taken to be as cold.
  EXPECT_DOUBLE_EQ(*eta.Seconds(4), 40);
  // One pair: warm took 0.2 of cold, weighed 1/2 against 1: the three warm runs left take 6 each.
  eta.Done(4, 2);
  EXPECT_NEAR(*eta.Seconds(5), 3 * 6, 1e-9);
  // Two pairs: (2 + 8) / 20 = 0.5 of cold, weighed 2/3: 2/3 of cold.
  eta.Done(5, 8);
  EXPECT_NEAR(*eta.Seconds(6), 2 * 10 * 2.0 / 3, 1e-9);
  // Three pairs: (2 + 8 + 5) / 30 = 0.5, weighed 3/4: d warm is taken as 6.25.
  eta.Done(6, 5);
  EXPECT_NEAR(*eta.Seconds(7), 6.25, 1e-9);
}

// Before three pairs, a warm run that took longer than cold (it also warmed the file) scales
// nothing: the ratio counts as 1.
TEST(Eta, AFirstWarmRunSlowerThanColdDoesNotScaleUp) {
  std::vector<Eta::Item> items;
  for (const char* cache : {"cold", "warm"}) {
    for (const char* s : {"a", "b"}) items.push_back({s, cache, 0});
  }
  Eta eta(items);
  eta.Done(0, 2);
  eta.Done(1, 4);
  eta.Done(2, 7);  // a warm: 3.5x its cold time
  EXPECT_DOUBLE_EQ(*eta.Seconds(3), 4);
}

// Without the strategy measured anywhere: the probe's estimate, scaled by how the measured runs
// compared with theirs.
TEST(Eta, EstimatesScaleByWhatTheRunsTook) {
  std::vector<Eta::Item> items = {{"a", "cold", 10}, {"b", "cold", 4}};
  Eta eta(items);
  eta.Done(0, 20);  // twice its estimate
  EXPECT_DOUBLE_EQ(*eta.Seconds(1), 8);
}

TEST(Eta, DurationText) {
  EXPECT_EQ(DurationText(42.4), "42 s");
  EXPECT_EQ(DurationText(185), "3 min 05 s");
  EXPECT_EQ(DurationText(179.6), "3 min 00 s");
  EXPECT_EQ(DurationText(3599.7), "1 h 00 min");
  EXPECT_EQ(DurationText(7800), "2 h 10 min");
}

}  // namespace
}  // namespace loadbench
