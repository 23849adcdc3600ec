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
// for the strategies measured in both; not the mean of every run so far.
TEST(Eta, TheSameStrategyInAnotherConditionScaled) {
  Eta eta(Plan(0));
  eta.Done(0, 10);  // fread cold
  eta.Done(1, 1);   // mmap cold
  // Nothing measured warm: warm is taken to be as cold.
  EXPECT_DOUBLE_EQ(*eta.Seconds(2), 10 + 1 + 10 + 1 + 10 + 1);
  eta.Done(2, 5);  // fread warm: half its cold time, so mmap warm is taken as 0.5
  EXPECT_DOUBLE_EQ(*eta.Seconds(3), 0.5 + 10 + 1 + 5 + 0.5);
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
  EXPECT_EQ(DurationText(7800), "2 h 10 min");
}

}  // namespace
}  // namespace loadbench
