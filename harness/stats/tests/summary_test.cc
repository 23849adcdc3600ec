// The console summary's figures, on records made up here: literal values, so that a median
// replaced by a minimum, a missing figure counted as 0, or unlike runs pooled fail a test.
#include "harness/stats/summary.h"

#include <gtest/gtest.h>

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

Json Ok(const std::string& spec, const std::string& cache, double wall, double file_bytes = 2e9) {
  return {{"strategy", spec.substr(0, spec.find(':'))},
          {"strategy_spec", spec},
          {"file", "/d/a.wlf"},
          {"file_bytes", file_bytes},
          {"cache", cache},
          {"status", "ok"},
          {"wall_s", wall},
          {"ready_s", wall / 2},
          {"peak_rss_bytes", 3e9},
          {"read_bytes", 2e9},
          {"major_faults", 12},
          {"minor_faults", 1000},
          {"load_major_faults", 1},
          {"load_minor_faults", 400}};
}

// The line of the table that starts with `prefix` (cache and row label).
std::string Line(const std::string& table, const std::string& prefix) {
  for (size_t pos = 0; pos < table.size();) {
    const size_t nl = table.find('\n', pos);
    const std::string line = table.substr(pos, nl - pos);
    if (line.starts_with(prefix)) return line;
    pos = nl == std::string::npos ? table.size() : nl + 1;
  }
  return "";
}

TEST(SummaryTable, FiguresAreMediansOfTheOkRunsAndTheLoadsOwnFaults) {
  std::vector<Json> runs = {Ok("fread", "cold", 1.0), Ok("fread", "cold", 4.0),
                            Ok("fread", "cold", 2.0)};
  Json failed = Ok("fread", "cold", 100.0);
  failed["status"] = "failed";
  runs.push_back(failed);
  runs[0]["load_minor_faults"] = 100;  // median of 100, 400, 400
  const std::string line = Line(SummaryTable(runs), "cold  fread ");
  EXPECT_EQ(line,
            "cold  fread                    3/4     2.000     1.000     4.000    1.00    1.000"
            "    3000 MB    2000 MB         1        400")
      << SummaryTable(runs);
}

TEST(SummaryTable, UnlikeRunsGetRowsOfTheirOwn) {
  Json two = Ok("mmap", "warm", 1.0), limited = Ok("mmap", "warm", 3.0),
       other_file = Ok("mmap", "cold", 5.0, 1e9);
  two["procs"] = 2;
  limited["memory_limit_bytes"] = 1 << 30;
  other_file["file"] = "/d/b.wlf";
  const std::string t =
      SummaryTable({Ok("mmap", "warm", 0.5), two, limited, Ok("mmap", "cold", 2.0), other_file});
  EXPECT_NE(Line(t, "warm  mmap a.wlf "), "") << t;
  EXPECT_NE(Line(t, "warm  mmap x2 a.wlf "), "") << t;
  EXPECT_NE(Line(t, "warm  mmap limit 1024MiB a.wlf "), "") << t;
  // GB/s from each row's own file: 1e9 bytes in 5 s.
  EXPECT_NE(Line(t, "cold  mmap b.wlf ").find(" 0.20 "), std::string::npos) << t;
  EXPECT_NE(Line(t, "cold  mmap a.wlf ").find(" 1.00 "), std::string::npos) << t;
}

TEST(SummaryTable, AMissingFigureIsMissingNotZero) {
  Json r = Ok("fread", "warm", 1.0);
  r.erase("read_bytes");
  r["load_major_faults"] = nullptr;
  const std::string line = Line(SummaryTable({r}), "warm  fread ");
  EXPECT_EQ(line,
            "warm  fread                    1/1     1.000     1.000     1.000    2.00    0.500"
            "    3000 MB          -         -        400")
      << line;
}

TEST(SummaryTable, AnExecRowWithoutAChecksumSaysItIsUnverified) {
  Json plain = Ok("exec:label=cat", "warm", 1.0), checked = Ok("exec:label=np", "warm", 2.0);
  plain["verify"] = "none";
  checked["verify"] = "checksum";
  const std::string t = SummaryTable({plain, checked});
  EXPECT_NE(Line(t, "warm  exec:label=cat (unverified) "), "") << t;
  EXPECT_NE(Line(t, "warm  exec:label=np "), "") << t;
  EXPECT_EQ(Line(t, "warm  exec:label=np (unverified)"), "") << t;
}

// The many-readers table: a round lasts as long as its slowest reader, its throughput is every
// reader's bytes over that time, and a reader not ok leaves its round without figures, said
// with the reason.
Json Reader(int rep, int proc, double wall, double bytes, const std::string& pattern = "tp") {
  return {{"strategy", "fread"}, {"strategy_spec", "fread"},
          {"file", "/d/a.wlf"},  {"file_bytes", 4e9},
          {"cache", "cold"},     {"rep", rep},
          {"procs", 2},          {"proc", proc},
          {"pattern", pattern},  {"status", "ok"},
          {"wall_s", wall},      {"tensor_bytes", bytes}};
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
  EXPECT_NE(table.find("rep 1: no duration: reader 1 (host b, rank 1): failed: worker killed "
                       "by signal 9"),
            std::string::npos)
      << table;
}

TEST(ReadersTable, AMissingReaderLeavesItsRoundWithoutDuration) {
  const std::string table = ReadersTable({Reader(0, 0, 1.0, 2e9)});
  EXPECT_NE(table.find("rep 0: no duration: reader 1: no record"), std::string::npos) << table;
}

TEST(ReadersTable, ARoundRunsFromTheFirstStartToTheLastEnd) {
  std::vector<Json> runs = {Reader(0, 0, 3.0, 2e9), Reader(0, 1, 2.0, 2e9)};
  runs[0]["load_start_unix_s"] = 100.0;
  runs[1]["load_start_unix_s"] = 101.5;  // started 1.5 s late, ends at 103.5
  const std::string line = Line(ReadersTable(runs), "cold  fread x2 tp");
  EXPECT_NE(line.find("3.500"), std::string::npos) << line;   // duration
  EXPECT_NE(line.find("1500.0"), std::string::npos) << line;  // start spread, ms
}

TEST(ReadersTable, ACommandsBytesAreTheBytesItNeeded) {
  // Commands report no tensor_bytes (null in a record): 2 GB each needed over 2 s.
  std::vector<Json> runs = {Reader(0, 0, 2.0, 0), Reader(0, 1, 2.0, 0)};
  for (Json& r : runs) r["tensor_bytes"] = nullptr, r["needed_bytes"] = 2e9;
  EXPECT_NE(Line(ReadersTable(runs), "cold  fread x2 tp").find("2.00"), std::string::npos);
  runs[1].erase("needed_bytes");  // not known for one reader: no total
  const std::string line = Line(ReadersTable(runs), "cold  fread x2 tp");
  EXPECT_NE(line.find("2.000          -"), std::string::npos) << line;
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
