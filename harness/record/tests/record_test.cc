// The run record against its documentation: every key the tool writes is in
// docs/results-format.md, in the order it is written, and every key there is one the record
// holds; real records from the binary hold every key not marked "only", and nothing else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/gen/generator.h"
#include "harness/record/record.h"
#include "tests/support/run_cli.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// The runs.jsonl table of docs/results-format.md: each row's key and whether it is "*only*".
struct DocRow {
  std::string key;
  bool only = false;
};

std::vector<DocRow> DocumentedKeys() {
  std::ifstream in(std::string(LOADBENCH_SOURCE_DIR) + "/docs/results-format.md");
  std::vector<DocRow> rows;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("## ")) in_section = line == "## runs.jsonl";
    // A row: "| `key` | meaning |".
    const size_t end = line.find("` | ");
    if (!in_section || !line.starts_with("| `") || end == std::string::npos) continue;
    const std::string key = line.substr(3, end - 3);
    // The keys inside details, device and exec depend on the strategy: documented, not held by
    // the record's own fields.
    if (key.starts_with("details.") || key.starts_with("device.") || key.starts_with("exec.")) {
      continue;
    }
    rows.push_back({key, line.compare(end + 4, 6, "*only*") == 0});
  }
  return rows;
}

TEST(RunRecord, EveryKeyIsDocumentedInTheOrderItIsWritten) {
  std::vector<std::string> documented;
  for (const DocRow& r : DocumentedKeys()) documented.push_back(r.key);
  ASSERT_FALSE(documented.empty()) << "no runs.jsonl table in docs/results-format.md";
  EXPECT_EQ(documented, RecordKeys());
}

TEST(RunRecord, KeysMarkedOnlyAreTheOnesWrittenOnlyWhenSet) {
  // An empty record holds exactly the keys every record has.
  const Json empty = RecordJson(RunRecord{});
  for (const DocRow& r : DocumentedKeys()) {
    const size_t dot = r.key.find('.');
    const Json& parent = dot == std::string::npos ? empty : empty[r.key.substr(0, dot)];
    const std::string key = dot == std::string::npos ? r.key : r.key.substr(dot + 1);
    EXPECT_EQ(parent.contains(key), !r.only) << r.key;
  }
}

TEST(RunRecord, TheWorkersLineCarriesEveryFieldBack) {
  RunRecord r;
  r.status = "ok";
  r.wall_s = 1.5;
  r.checksum_ok = true;
  r.memory.pss_bytes = 4096;
  r.counters = {{"perf::PAGE-FAULTS", 12}, {"CYCLES", nullptr}};
  r.counters_scaled = {"CYCLES"};
  r.details = {{"role", "creator"}};
  r.load_start_mono_s = 123.25;
  r.profile_window_mono_s = Json::array({Json::array({123.25, 124.5})});
  r.load_start_unix_s = 1767225600.123456;
  RunRecord back;
  ASSERT_TRUE(FromWireJson(Json::parse(WireJson(r).dump()), &back).ok());
  EXPECT_EQ(RecordJson(back), RecordJson(r));
  EXPECT_EQ(back.load_start_mono_s, 123.25);
  EXPECT_EQ(back.profile_window_mono_s, r.profile_window_mono_s);
  EXPECT_EQ(back.load_start_unix_s, 1767225600.123456) << "the microseconds of the start lost";
  EXPECT_EQ(RecordJson(r)["load_start_unix_s"].dump(), "1767225600.123456");
  EXPECT_FALSE(RecordJson(r).contains("load_start_mono_s")) << "a wire-only field was written";
  EXPECT_FALSE(RecordJson(r).contains("profile_window_mono_s"));
  EXPECT_FALSE(FromWireJson(Json::parse(R"({"wall_s": "fast"})"), &back).ok());
  EXPECT_FALSE(FromWireJson(Json::array(), &back).ok());
}

class RecordCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/loadbench_record_test.XXXXXX";  // not /tmp: tmpfs cannot be cold
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    GenOptions g;
    g.size_bytes = 2u << 20;
    g.out_path = dir_ + "/model.wlf";
    GenResult r;
    ASSERT_TRUE(Generate(g, &r).ok());
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
};

// Several workers, a ceiling and an unsupported point in one cold round: every record the
// binary writes holds every always-present key and only documented keys. (This run also once
// crashed the runner: the ceiling record, which has no worker number, was logged as if it had one.)
TEST_F(RecordCliTest, RealRecordsHoldTheDocumentedKeys) {
  const std::string out = dir_ + "/out";
  const int code =
      test::RunLoadbenchInto(dir_,
                             "run --file " + dir_ +
                                 "/model.wlf --strategies fread,fread:buffer=hugetlb,mmap "
                                 "--cache cold --reps 1 --procs 2 --ceiling --sample-ms 0 --out " +
                                 out);
  ASSERT_EQ(code, 0) << test::ReadWholeFile(dir_ + "/stderr.txt");
  std::set<std::string> documented, always;
  for (const DocRow& r : DocumentedKeys()) {
    if (r.key.find('.') != std::string::npos) continue;
    documented.insert(r.key);
    if (!r.only) always.insert(r.key);
  }
  const auto runs = test::ReadRuns(out);
  ASSERT_EQ(runs.size(), 7u);  // 3 points x 2 workers, and one ceiling read
  std::set<std::string> statuses;
  for (const auto& r : runs) {
    statuses.insert(r["strategy"].get<std::string>() + " " + r["status"].get<std::string>());
    for (const auto& [key, value] : r.items()) EXPECT_TRUE(documented.count(key)) << key;
    for (const std::string& key : always) EXPECT_TRUE(r.contains(key)) << key << " " << r.dump();
    EXPECT_EQ(r.contains("proc"), r["strategy"] != "ceiling") << r.dump();
  }
  EXPECT_TRUE(statuses.count("fread ok")) << ::testing::PrintToString(statuses);
  EXPECT_TRUE(statuses.count("mmap ok")) << ::testing::PrintToString(statuses);
}

}  // namespace
}  // namespace loadbench
