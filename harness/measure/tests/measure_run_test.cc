// MeasureRun's one sequence, driven in this process: a ceiling run is the read the settings
// name for it, launched with the run's request and completed into one record under the run's
// identity, with nothing measured around it; a load's records get what moved on the meters
// between the end of the host's preparation and the readers' end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/file.h"
#include "harness/experiment/point.h"
#include "harness/launch/ceiling.h"
#include "harness/measure/measure.h"
#include "harness/record/reporter.h"
#include "harness/record/results.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// A ceiling's read that reads nothing: it keeps what it was asked and reports a figure.
class FakeCeiling final : public CeilingRead {
 public:
  void Read(const LaunchRequest& req, RunRecord* r) override {
    asked.push_back(req);
    r->status = "ok";
    r->params = {{"tool", "fake"}};
    r->gb_per_s = 2.0;
    r->wall_s = 0.5;
    r->ceiling_bytes = 1000000000;
  }
  std::vector<LaunchRequest> asked;
};

// Meters that move by the same amounts at every reading, and count the readings.
class SteppingMeters final : public Meters {
 public:
  MeterReading Read() const override {
    ++reads;
    return {0.25 * reads, 0.5 * reads, 1000u * static_cast<uint64_t>(reads)};
  }
  mutable int reads = 0;
};

class MeasureRunPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::WriteWlfFile(dir_.File("model.wlf"), test::OddTensors());
    ASSERT_TRUE(PrepareFile(dir_.File("model.wlf"), "test", &file_).ok());
    ASSERT_TRUE(out_.Open(dir_.File("runs.jsonl")).ok());
    reporter_.out = &out_;
    reporter_.stamp = "20260101T000000";
    reporter_.log = false;
    settings_.out_dir = dir_.path();
    settings_.exe = LOADBENCH_BINARY;
    settings_.sample_ms = 0;
    settings_.meters = &meters_;
  }

  // The records of a run of `p`, measured to the end.
  std::vector<Json> Measure(const RunPoint& p) {
    bool interrupted = false;
    const Status s = MeasureRun(settings_, reporter_, file_, p, &interrupted);
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_FALSE(interrupted);
    return ReadRecords(dir_.File("runs.jsonl"));
  }

  test::TempDir dir_;
  PreparedFile file_;
  JsonlWriter out_;
  Reporter reporter_;
  SteppingMeters meters_;
  MeasureSettings settings_;
};

TEST_F(MeasureRunPathTest, ACeilingIsTheReadItsNameFindsCompletedUnderTheRunsIdentity) {
  FakeCeiling link;
  settings_.ceilings[kLinkCeiling] = &link;
  RunPoint p;
  p.spec = CeilingRunSpec(kLinkCeiling);
  p.cache = "warm";
  p.rep = 3;
  p.procs = 2;
  p.link = "200mbit";
  const std::vector<Json> runs = Measure(p);

  ASSERT_EQ(link.asked.size(), 1u) << "the run is the read the settings name";
  EXPECT_EQ(link.asked[0].worker.file, file_.path);
  EXPECT_EQ(link.asked[0].readers, 2);
  EXPECT_EQ(link.asked[0].link, "200mbit");
  EXPECT_EQ(meters_.reads, 0) << "nothing is metered around a ceiling";
  ASSERT_EQ(runs.size(), 1u) << "one read stands for the run's two readers";
  const Json& r = runs[0];
  EXPECT_EQ(r["strategy"], kLinkCeiling);
  EXPECT_EQ(r["status"], "ok") << r.dump(2);
  EXPECT_EQ(r["params"], Json({{"tool", "fake"}}));
  EXPECT_EQ(r["gb_per_s"], 2.0);
  EXPECT_EQ(r["file"], file_.path);
  EXPECT_EQ(r["cache"], "warm");
  EXPECT_EQ(r["rep"], 3);
  EXPECT_EQ(r["procs"], 2);
  EXPECT_EQ(r["link"], "200mbit");
  EXPECT_FALSE(r["ended_at"].get<std::string>().empty());
  // Nothing the runner measures around readers: no host state (a warm run with none would be
  // invalid), no process, no meters.
  for (const char* key : {"proc", "drop_method", "warm_reads", "server_cpu_s", "link_rx_bytes"}) {
    EXPECT_FALSE(r.contains(key)) << key;
  }
  for (const char* key : {"resident_before", "resident_after", "process_s", "user_s"}) {
    EXPECT_TRUE(r[key].is_null()) << key;
  }
}

TEST_F(MeasureRunPathTest, ALoadsRecordsGetWhatMovedOnTheMetersOverItsReaders) {
  RunPoint p;
  p.spec.name = p.spec.text = "fread";
  ASSERT_TRUE(ResolveSpec(p.spec, &p.strategy).ok());  // as the plan resolves it
  p.cache = "warm";
  p.procs = 2;
  const std::vector<Json> runs = Measure(p);

  EXPECT_EQ(meters_.reads, 2) << "once after the host's preparation, once after the readers";
  ASSERT_EQ(runs.size(), 2u);
  for (const Json& r : runs) {
    EXPECT_EQ(r["status"], "ok") << r.dump(2);
    EXPECT_EQ(r["server_cpu_s"], 0.25);
    EXPECT_EQ(r["mount_cpu_s"], 0.5);
    EXPECT_EQ(r["link_rx_bytes"], 1000);
  }
}

}  // namespace
}  // namespace loadbench
