// The fault costs' median and spread, and the memory fill: the median is the repetition of median
// time and lies within the spread; a THP repetition that got no huge page is left out of both,
// and counted; none left is no figure. Then the measurements themselves, on small sizes.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "harness/probe/probe_measure.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;

// A repetition of `seconds` with 1000 faults: 1000 us per fault per second.
FaultRep Rep(double seconds, std::optional<uint64_t> huge_bytes = std::nullopt) {
  return {seconds, 1000, 0, huge_bytes};
}

double At(const Json& j, const char* key, size_t i) { return j[key].at(i).get<double>(); }

// median_us is us_per_fault, one of the repetitions kept, and lies within spread_us.
void ExpectMedianWithinSpread(const Json& j) {
  ASSERT_TRUE(j["median_us"].is_number()) << j.dump(2);
  EXPECT_EQ(j["median_us"], j["us_per_fault"]);
  ASSERT_TRUE(j["spread_us"].is_array() && j["spread_us"].size() == 2) << j.dump(2);
  EXPECT_LE(At(j, "spread_us", 0), j["median_us"].get<double>()) << j.dump(2);
  EXPECT_GE(At(j, "spread_us", 1), j["median_us"].get<double>()) << j.dump(2);
  EXPECT_EQ(j["best_us_per_fault"], j["spread_us"][0]);
}

TEST(RecordFaultReps, TheMedianRepetitionAndTheSpreadOfAll) {
  Json j;
  const std::vector<FaultRep> reps = {Rep(0.007), Rep(0.002), Rep(0.005), Rep(0.001),
                                      Rep(0.006), Rep(0.004), Rep(0.003)};
  const std::optional<FaultRep> median = RecordFaultReps(reps, &j);
  ASSERT_TRUE(median.has_value());
  EXPECT_DOUBLE_EQ(median->seconds, 0.004);
  EXPECT_DOUBLE_EQ(j["median_us"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(At(j, "spread_us", 0), 1.0);
  EXPECT_DOUBLE_EQ(At(j, "spread_us", 1), 7.0);
  EXPECT_EQ(j["faults"], 1000);
  ASSERT_EQ(j["reps_us_per_fault"].size(), 7u);
  EXPECT_DOUBLE_EQ(At(j, "reps_us_per_fault", 0), 7.0);  // in the order they ran
  ExpectMedianWithinSpread(j);
  // Base pages: nothing is left out, and nothing about huge pages is said.
  EXPECT_FALSE(j.contains("reps_huge_page"));
  EXPECT_FALSE(j.contains("reps_left_out"));
}

TEST(RecordFaultReps, OfAnEvenCountTheSlowerOfTheMiddleTwo) {
  Json j;
  const auto median = RecordFaultReps({Rep(0.001), Rep(0.004), Rep(0.002), Rep(0.003)}, &j);
  ASSERT_TRUE(median.has_value());
  EXPECT_DOUBLE_EQ(j["median_us"].get<double>(), 3.0);
  ExpectMedianWithinSpread(j);
}

// Two repetitions without a huge page, the fastest two: kept, they would be the spread's least
// and pull the median down to a 4 KiB fault's cost.
TEST(RecordFaultReps, AThpRepetitionWithoutAHugePageIsLeftOut) {
  Json j;
  constexpr uint64_t kHuge = 2u << 20;
  const std::vector<FaultRep> reps = {Rep(0.050, kHuge), Rep(0.001, 0), Rep(0.040, kHuge),
                                      Rep(0.060, kHuge), Rep(0.002, 0), Rep(0.045, kHuge),
                                      Rep(0.055, kHuge)};
  const std::optional<FaultRep> median = RecordFaultReps(reps, &j);
  ASSERT_TRUE(median.has_value());
  EXPECT_DOUBLE_EQ(median->seconds, 0.050);  // the median of 40, 45, 50, 55, 60
  EXPECT_EQ(median->huge_bytes, kHuge);
  EXPECT_DOUBLE_EQ(j["median_us"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(At(j, "spread_us", 0), 40.0);
  EXPECT_DOUBLE_EQ(At(j, "spread_us", 1), 60.0);
  ExpectMedianWithinSpread(j);
  EXPECT_EQ(j["reps_in_median"], 5);
  EXPECT_EQ(j["reps_left_out"], 2);
  EXPECT_EQ(j["reps_huge_page"], Json({true, false, true, true, false, true, true}));
  EXPECT_EQ(j["reps_us_per_fault"].size(), 7u);  // every repetition is still recorded
}

TEST(RecordFaultReps, NoHugePageInAnyRepetitionIsNoFigure) {
  Json j = {{"us_per_fault", nullptr}, {"median_us", nullptr}};
  EXPECT_FALSE(RecordFaultReps({Rep(0.001, 0), Rep(0.002, 0), Rep(0.003, 0)}, &j).has_value());
  EXPECT_TRUE(j["us_per_fault"].is_null());
  EXPECT_TRUE(j["median_us"].is_null());
  EXPECT_EQ(j["reps_in_median"], 0);
  EXPECT_EQ(j["reps_left_out"], 3);
}

TEST(RecordFaultReps, AMedianWithoutFaultsGivesNoFigure) {
  Json j = {{"us_per_fault", nullptr}};
  const auto median = RecordFaultReps({{0.001, 0, 0, std::nullopt}}, &j);
  ASSERT_TRUE(median.has_value());
  EXPECT_EQ(median->minor, 0);
  EXPECT_TRUE(j["us_per_fault"].is_null());
  EXPECT_TRUE(j["reps_us_per_fault"].at(0).is_null());
}

TEST(ProbeMeasure, AnonFaultHasAMedianWithinItsSpread) {
  const Json j = AnonFault4k(4u << 20, 7);
  ASSERT_TRUE(j["us_per_fault"].is_number()) << j.dump(2);
  EXPECT_GT(j["us_per_fault"].get<double>(), 0);
  EXPECT_EQ(j["reps"], 7);
  EXPECT_EQ(j["reps_us_per_fault"].size(), 7u);
  ExpectMedianWithinSpread(j);
}

// Whether huge pages are granted depends on the machine's free memory at that moment: a figure
// with its median and spread, or none with the reason; either way every repetition is counted.
TEST(ProbeMeasure, ThpFaultCountsTheRepetitionsWithoutAHugePage) {
  const Json j = ThpFault(8u << 20, 3);
  if (j["us_per_fault"].is_null()) {
    ASSERT_TRUE(j["reason"].is_string()) << j.dump(2);
    return;
  }
  ExpectMedianWithinSpread(j);
  EXPECT_EQ(j["reps_in_median"].get<int>() + j["reps_left_out"].get<int>(), 3) << j.dump(2);
  EXPECT_GE(j["reps_in_median"].get<int>(), 1);
  EXPECT_EQ(j.contains("left_out_note"), j["reps_left_out"] != 0) << j.dump(2);
}

TEST(ProbeMeasure, MemoryFillIsThePositiveMedianWithinItsSpread) {
  const Json j = MemoryFill(8u << 20, 3);
  ASSERT_TRUE(j["gb_per_s"].is_number()) << j.dump(2);
  const double rate = j["gb_per_s"].get<double>();
  EXPECT_GT(rate, 0);
  EXPECT_EQ(j["gb_per_s"], j["median_gb_per_s"]);
  ASSERT_EQ(j["reps_gb_per_s"].size(), 3u);
  EXPECT_LE(At(j, "spread_gb_per_s", 0), rate) << j.dump(2);
  EXPECT_GE(At(j, "spread_gb_per_s", 1), rate) << j.dump(2);
  EXPECT_EQ(j["best_gb_per_s"], j["spread_gb_per_s"][1]);
  EXPECT_EQ(j["chosen"], "median of 3");
}

}  // namespace
}  // namespace loadbench::probe
