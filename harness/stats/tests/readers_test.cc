// The many-readers table, on records made up here: a round lasts as long as its slowest reader,
// its throughput is every reader's bytes over that time, and a reader not ok leaves its round
// without figures, said with the reason.
#include <gtest/gtest.h>

#include "harness/stats/summary.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

Json Reader(int rep, int proc, double wall, double bytes, const std::string& pattern = "tp") {
  return {{"strategy", "fread"}, {"strategy_spec", "fread"}, {"file", "/d/a.wlf"},
          {"file_bytes", 4e9}, {"cache", "cold"}, {"rep", rep}, {"procs", 2}, {"proc", proc},
          {"pattern", pattern}, {"status", "ok"}, {"wall_s", wall}, {"tensor_bytes", bytes}};
}

std::string Line(const std::string& table, const std::string& prefix) {
  for (size_t pos = 0; pos < table.size();) {
    const size_t nl = table.find('\n', pos);
    const std::string line = table.substr(pos, nl - pos);
    if (line.starts_with(prefix)) return line;
    pos = nl == std::string::npos ? table.size() : nl + 1;
  }
  return "";
}

TEST(ReadersTable, NothingWithoutSeveralReaders) {
  Json one = Reader(0, 0, 1.0, 1e9);
  one.erase("procs");
  one.erase("proc");
  EXPECT_EQ(ReadersTable({one}), "");
}

TEST(ReadersTable, ARoundLastsAsLongAsItsSlowestReader) {
  // Round 0: 1 s and 3 s (duration 3, 4 GB over 3 s, spread 3 / 2); round 1: 2 s and 2 s.
  const std::vector<Json> runs = {Reader(0, 0, 1.0, 2e9), Reader(0, 1, 3.0, 2e9),
                                  Reader(1, 0, 2.0, 2e9), Reader(1, 1, 2.0, 2e9)};
  const std::string line = Line(ReadersTable(runs), "cold  fread x2 tp");
  // Medians over the rounds: duration (3, 2) -> 2.5; GB/s (1.33, 2) -> 1.67; spread (1.5, 1).
  EXPECT_NE(line.find("2/2"), std::string::npos) << line;
  EXPECT_NE(line.find("2.500"), std::string::npos) << line;
  EXPECT_NE(line.find("1.67"), std::string::npos) << line;
  EXPECT_NE(line.find("1.25"), std::string::npos) << line;
}

TEST(ReadersTable, AFailedReaderLeavesItsRoundWithoutDurationAndSaysWhy) {
  Json failed = Reader(1, 1, 9.0, 2e9);
  failed["status"] = "failed";
  failed["error"] = "worker killed by signal 9 (Killed)";
  failed["rank"] = 1;
  failed["host"] = "b";
  const std::vector<Json> runs = {Reader(0, 0, 1.0, 2e9), Reader(0, 1, 2.0, 2e9),
                                  Reader(1, 0, 1.0, 2e9), failed};
  const std::string table = ReadersTable(runs);
  const std::string line = Line(table, "cold  fread x2 tp");
  EXPECT_NE(line.find("1/2"), std::string::npos) << line;
  EXPECT_NE(line.find("2.000"), std::string::npos) << line;  // round 0 only
  EXPECT_NE(table.find("rep 1: no duration: reader 1 (rank 1, host b) failed: worker killed "
                       "by signal 9"),
            std::string::npos)
      << table;
}

TEST(ReadersTable, AMissingReaderLeavesItsRoundWithoutDuration) {
  const std::string table = ReadersTable({Reader(0, 0, 1.0, 2e9)});
  EXPECT_NE(table.find("rep 0: no duration: reader 1 left no record"), std::string::npos) << table;
}

TEST(ReadersTable, PatternsAreRowsOfTheirOwn) {
  const std::vector<Json> runs = {Reader(0, 0, 1.0, 2e9, "tp"), Reader(0, 1, 1.0, 2e9, "tp"),
                                  Reader(0, 0, 5.0, 4e9, "replicated"),
                                  Reader(0, 1, 5.0, 4e9, "replicated")};
  const std::string table = ReadersTable(runs);
  EXPECT_NE(Line(table, "cold  fread x2 tp").find("1.000"), std::string::npos) << table;
  EXPECT_NE(Line(table, "cold  fread x2   ").find("5.000"), std::string::npos) << table;
}

}  // namespace
}  // namespace loadbench
