// The console's lines at the end of a run, against the fixtures the report is tested on too
// (analysis/tests/fixtures/console/*: runs.jsonl and expected.json, written by make_console.py
// with figures worked out by other routes; analysis/tests/test_console_lines.py checks the
// report's summary.json against the same figures): the summary table's rows and ceiling line,
// the many-readers table's rows, and every line under them (the paired ratios, the runs of
// several readers not paired, a ceiling that is not one, drift, outliers), so that the console
// and the report say one thing.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/stats/comparison.h"
#include "harness/stats/noise.h"
#include "harness/stats/summary.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
const std::string kFixtures = LOADBENCH_SOURCE_DIR "/analysis/tests/fixtures/console/";

std::vector<Json> Records(const std::string& name) {
  std::ifstream in(kFixtures + name + "/runs.jsonl");
  EXPECT_TRUE(in.good()) << name;
  std::vector<Json> out;
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

Json Expected(const std::string& name) {
  std::ifstream in(kFixtures + name + "/expected.json");
  EXPECT_TRUE(in.good()) << name;
  return Json::parse(in);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The cells after a table row's cache and label (a label has spaces; the first cell, rounds or
// runs, is "N/M"), or none when no row has that label.
std::vector<std::string> Cells(const std::string& table, const std::string& cache,
                               const std::string& label) {
  const std::string prefix = fmt::format("{:<5} {} ", cache, label);
  for (const std::string& line : Lines(table)) {
    if (!line.starts_with(prefix)) continue;
    const std::vector<std::string> cells = Words(line.substr(prefix.size()));
    if (!cells.empty() && cells[0].find('/') != std::string::npos) return cells;
  }
  return {};
}

// The rows of a table: its lines that start with a cache state.
size_t Rows(const std::string& table) {
  size_t n = 0;
  for (const std::string& line : Lines(table)) {
    n += line.starts_with("cold ") || line.starts_with("warm ");
  }
  return n;
}

std::string Fixed(const Json& v, int decimals, double scale = 1) {
  return fmt::format("{:.{}f}", v.get<double>() / scale, decimals);
}

// The console's lines that a fixture's expected.json names under `key` (a line, null, a list of
// lines, or objects with a "console" line, or an object with a line and "runs" of such).
void Collect(const Json& v, std::vector<std::string>* out) {
  if (v.is_string()) out->push_back(v.get<std::string>());
  if (v.is_array()) {
    for (const Json& e : v) Collect(e, out);
  }
  if (v.is_object()) {
    if (v.contains("console")) Collect(v["console"], out);
    if (v.contains("runs")) Collect(v["runs"], out);
  }
}

class ConsoleLines : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    records_ = Records(GetParam());
    expected_ = Expected(GetParam());
    ASSERT_FALSE(records_.empty());
    ASSERT_TRUE(expected_.contains("summary"));
  }
  std::vector<Json> records_;
  Json expected_;
};

TEST_P(ConsoleLines, SummaryTableRows) {
  const std::string table = SummaryTable(records_);
  ASSERT_FALSE(expected_["summary"].empty());
  EXPECT_EQ(Rows(table), expected_["summary"].size()) << table;
  for (const Json& row : expected_["summary"]) {
    const std::string label = row["console_label"].get<std::string>();
    SCOPED_TRACE(label);
    const std::vector<std::string> cells = Cells(table, row["cache"], label);
    // ok median min max GB/s ready_s RSS MB read MB major minor
    ASSERT_EQ(cells.size(), 12u) << table;
    EXPECT_EQ(cells[0], fmt::format("{}/{}", row["n"].get<int>(), row["runs"].get<int>()));
    EXPECT_EQ(cells[1], Fixed(row["median_s"], 3));
    EXPECT_EQ(cells[2], Fixed(row["min_s"], 3));
    EXPECT_EQ(cells[3], Fixed(row["max_s"], 3));
    EXPECT_EQ(cells[4], Fixed(row["gb_per_s"], 2));
    EXPECT_EQ(cells[6], Fixed(row["peak_rss_bytes"], 0, 1e6));
    EXPECT_EQ(cells[8], Fixed(row["read_bytes"], 0, 1e6));
    EXPECT_EQ(cells[11], Fixed(row["minor_faults"], 0));
  }
}

TEST_P(ConsoleLines, CeilingLine) {
  const std::vector<std::string> lines = Lines(SummaryTable(records_));
  const auto it = std::find_if(lines.begin(), lines.end(),
                               [](const std::string& l) { return l.starts_with("ceiling"); });
  if (expected_["ceiling"].is_null()) {
    EXPECT_EQ(it, lines.end());
    return;
  }
  ASSERT_NE(it, lines.end());
  EXPECT_EQ(*it, expected_["ceiling"]["console"].get<std::string>());
}

TEST_P(ConsoleLines, ReadersTableRows) {
  const std::string table = ReadersTable(records_);
  EXPECT_EQ(Rows(table), expected_["readers"].size()) << table;
  for (const Json& row : expected_["readers"]) {
    const std::string label = row["console_label"].get<std::string>();
    SCOPED_TRACE(label);
    const std::vector<std::string> cells = Cells(table, row["cache"], label);
    // rounds duration_s total_GB/s spread start_ms
    ASSERT_EQ(cells.size(), 5u) << table;
    EXPECT_EQ(cells[0],
              fmt::format("{}/{}", row["whole_rounds"].get<int>(), row["rounds"].get<int>()));
    EXPECT_EQ(cells[1], Fixed(row["duration_s"], 3));
    EXPECT_EQ(cells[2], Fixed(row["gb_per_s"], 2));
    EXPECT_EQ(cells[3], Fixed(row["spread"], 2));
  }
}

// Every line under the tables, and none besides: the paired lines (after their heading), the
// line on too few rounds, the runs not paired, a ceiling that is not one, drift, outliers.
TEST_P(ConsoleLines, EveryNoiseLine) {
  std::vector<std::string> want;
  for (const char* key : {"paired", "too_few", "broken", "ceiling_beaten", "drift", "outliers"}) {
    Collect(expected_[key], &want);
  }
  const std::string baseline = expected_["baseline"];
  if (std::any_of(expected_["paired"].begin(), expected_["paired"].end(),
                  [](const Json& p) { return p["console"].is_string(); })) {
    want.push_back(fmt::format("paired, time over {}'s in the same round (exact signed-rank "
                               "interval, at least 95%; below 1: faster):",
                               baseline));
  }
  std::vector<std::string> got = Lines(NoiseSummary(records_, baseline));
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

// The figures behind the paired lines, to more digits than the lines print. The fixture's come
// from another route (every sign pattern counted, in Python's doubles): 1e-9 allows the rounding
// of two orders of summing, far below the lines' 2 decimals; the level is a ratio of counts.
TEST_P(ConsoleLines, PairedFigures) {
  const RoundsVerdict v = CompareWithBaseline(records_, expected_["baseline"], 0);
  EXPECT_EQ(v.comparisons.size(), expected_["paired"].size());
  for (const Json& want : expected_["paired"]) {
    SCOPED_TRACE(want["cache"].get<std::string>() + " " + want["strategy_spec"].get<std::string>());
    const auto c = std::find_if(v.comparisons.begin(), v.comparisons.end(), [&](const auto& c) {
      return c.cache == want["cache"] && c.procs == want["procs"] && c.link == want["link"] &&
             c.spec == want["strategy_spec"];
    });
    ASSERT_NE(c, v.comparisons.end());
    EXPECT_EQ(c->n, want["n"].get<int>());
    EXPECT_NEAR(c->ratio, want["ratio"].get<double>(), 1e-9);
    if (want["low"].is_null()) {
      EXPECT_TRUE(std::isinf(c->high));
      continue;
    }
    EXPECT_NEAR(c->low, want["low"].get<double>(), 1e-9);
    EXPECT_NEAR(c->high, want["high"].get<double>(), 1e-9);
    EXPECT_NEAR(c->level, want["level"].get<double>(), 1e-12);
  }
}

// The conditions' names the console's lines give (the report's are its own: "warm ×2").
TEST_P(ConsoleLines, ConditionNames) {
  std::set<std::string> got, want;
  for (const Json& r : records_) {
    if (r["strategy"] != "ceiling") got.insert(ConditionText(ConditionOf(r), false));
  }
  for (const Json& c : expected_["conditions"]) want.insert(c["console"].get<std::string>());
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConsoleLines, ::testing::Values("rounds", "readers", "link"));

}  // namespace
}  // namespace loadbench
