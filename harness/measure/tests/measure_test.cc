// What a run measures beyond its time: perf counters (software ones count, hardware ones the
// machine lacks are null with a reason, never 0), timelines sampled from outside, and memory
// sharing between workers loading the same file at once.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/gen/generator.h"
#include "harness/machine/counters.h"
#include "harness/machine/timeline.h"
#include "tests/support/run_cli.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

TEST(CountersTest, ParseExpandsDefaultAndNoneAndRefusesUnknownNames) {
  std::vector<std::string> names;
  ASSERT_TRUE(ParseCounterList("default", &names).ok());
  EXPECT_EQ(names, DefaultCounterNames());
  ASSERT_TRUE(ParseCounterList("none", &names).ok());
  EXPECT_TRUE(names.empty());
  ASSERT_TRUE(ParseCounterList("perf::PAGE-FAULTS,CYCLES", &names).ok());
  EXPECT_EQ(names.size(), 2u);
  Status s = ParseCounterList("perf::PAGE-FAULTS,NO-SUCH-EVENT", &names);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("NO-SUCH-EVENT"), std::string::npos) << s.message();
  EXPECT_FALSE(ParseCounterList("perf::PAGE-FAULTS,", &names).ok());
}

// Each counter is a positive count or null with a reason; 0 would be a lie.
void ExpectCountOrReason(const CounterSet& set, const std::string& name) {
  const auto values = set.Read();
  const auto reasons = set.Unavailable();
  ASSERT_TRUE(values.contains(name));
  if (values[name].is_null()) {
    ASSERT_TRUE(reasons.contains(name)) << name << " is null without a reason";
    EXPECT_FALSE(reasons[name].get<std::string>().empty());
  } else {
    EXPECT_GT(values[name].get<uint64_t>(), 0u) << name;
  }
}

// Touches every 4 KiB page of `len` fresh anonymous bytes, huge pages refused: one fault each.
bool TouchFreshPages(size_t len) {
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  ::madvise(p, len, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < len; i += 4096) static_cast<volatile char*>(p)[i] = 1;
  ::munmap(p, len);
  return true;
}

// Software events need no hardware: on Linux they count, unless the kernel's policy keeps this
// process out of perf_event_open altogether (then the test says so and skips).
TEST(CountersTest, SoftwareEventsCountOnLinux) {
  CounterSet set;
  ASSERT_TRUE(set.Open({"perf::PAGE-FAULTS", "perf::TASK-CLOCK"}).ok());
  const nlohmann::ordered_json unavailable = set.Unavailable();
  for (const char* name : {"perf::PAGE-FAULTS", "perf::TASK-CLOCK"}) {
    const std::string reason = unavailable.value(name, "");
    if (reason.find("not permitted") != std::string::npos ||
        reason.find("Function not implemented") != std::string::npos) {
      GTEST_SKIP() << name << ": " << reason;
    }
  }
  set.Enable();
  ASSERT_TRUE(TouchFreshPages(16u << 20));
  set.Disable();
  const auto values = set.Read();
  ASSERT_FALSE(values["perf::PAGE-FAULTS"].is_null()) << set.Unavailable().dump();
  ASSERT_FALSE(values["perf::TASK-CLOCK"].is_null()) << set.Unavailable().dump();
  EXPECT_GE(values["perf::PAGE-FAULTS"].get<uint64_t>(), 4096u);  // one per 4 KiB page
  EXPECT_GT(values["perf::TASK-CLOCK"].get<uint64_t>(), 0u);
}

TEST(CountersTest, CountsOnlyWhileEnabled) {
  CounterSet set;
  ASSERT_TRUE(set.Open({"perf::PAGE-FAULTS"}).ok());
  ASSERT_TRUE(TouchFreshPages(8u << 20));
  const auto values = set.Read();
  if (set.Unavailable().contains("perf::PAGE-FAULTS")) GTEST_SKIP() << set.Unavailable().dump();
  // Never enabled: the event never ran, so the count is unknown (null), not 0 and not 2048.
  EXPECT_TRUE(values["perf::PAGE-FAULTS"].is_null()) << values.dump();
}

TEST(CountersTest, HardwareEventsAreNullWithAReasonOrCount) {
  CounterSet set;
  ASSERT_TRUE(set.Open({"CYCLES", "INSTRUCTIONS"}).ok());
  set.Enable();
  volatile uint64_t x = 0;
  for (int i = 0; i < 1000000; ++i) x = x + static_cast<uint64_t>(i);
  set.Disable();
  ExpectCountOrReason(set, "CYCLES");
  ExpectCountOrReason(set, "INSTRUCTIONS");
}

TEST(CountersTest, CountsThreadsStartedAfterOpening) {
  CounterSet set;
  ASSERT_TRUE(set.Open({"perf::PAGE-FAULTS"}).ok());
  if (set.Unavailable().contains("perf::PAGE-FAULTS")) GTEST_SKIP() << set.Unavailable().dump();
  set.Enable();
  const size_t len = 16u << 20;
  std::thread t([len] { TouchFreshPages(len); });
  t.join();
  set.Disable();
  EXPECT_GE(set.Read()["perf::PAGE-FAULTS"].get<uint64_t>(), len / 4096);
}

// Runs of the built binary on a generated file, on disk (a tmpfs /tmp cannot be made cold).
class MeasureRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/loadbench_measure_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Generate(uint64_t bytes) {
    GenOptions g;
    g.preset = "llama";
    g.size_bytes = bytes;
    g.out_path = dir_ + "/model.wlf";
    g.seed = 5;
    g.progress = false;
    GenResult r;
    Status s = loadbench::Generate(g, &r);
    EXPECT_TRUE(s.ok()) << s.message();
    return g.out_path;
  }
  int Run(const std::string& args) { return test::RunLoadbenchInto(dir_, args); }
  std::string Slurp(const std::string& path) { return test::ReadWholeFile(path); }
  std::vector<Json> Runs(const std::string& out) { return test::ReadRuns(out); }
  std::string dir_;
};

TEST_F(MeasureRunTest, UnknownCounterIsBadInputNamingIt) {
  const std::string file = Generate(1u << 20);
  EXPECT_EQ(Run("run --file " + file + " --counters perf::PAGE-FAULTS,BOGUS-EVENT --out " + dir_ +
                "/out"),
            2);
  const std::string err = Slurp(dir_ + "/stderr.txt");
  EXPECT_NE(err.find("BOGUS-EVENT"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir_ + "/out/runs.jsonl"));
}

TEST_F(MeasureRunTest, SamplingFinerThanAMillisecondIsRefused) {
  const std::string file = Generate(1u << 20);
  EXPECT_EQ(Run("run --file " + file + " --sample-ms 0.5 --out " + dir_ + "/out"), 2);
  EXPECT_NE(Slurp(dir_ + "/stderr.txt").find("--sample-ms"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ + "/out"));
}

TEST_F(MeasureRunTest, CountersAreCountsOrNullExplainedOnceInEnv) {
  const std::string file = Generate(4u << 20);
  const std::string out = dir_ + "/out";
  ASSERT_EQ(Run("run --file " + file +
                " --strategies fread --cache warm --reps 1 --sample-ms 0 "
                "--out " +
                out),
            0)
      << Slurp(dir_ + "/stderr.txt");
  const Json env = Json::parse(Slurp(out + "/env.json"));
  const auto runs = Runs(out);
  ASSERT_EQ(runs.size(), 1u);
  const Json& counters = runs[0]["counters"];
  for (const std::string& name : DefaultCounterNames()) {
    ASSERT_TRUE(counters.contains(name)) << name;
    if (counters[name].is_null()) {
      EXPECT_TRUE(env["counters"]["unavailable"][name].is_string())
          << name << " is null but env.json does not say why: " << env["counters"].dump();
    } else if (name == "perf::PAGE-FAULTS" || name == "perf::MINOR-FAULTS" ||
               name == "perf::TASK-CLOCK") {
      // A warm load faults in its buffer and takes CPU time; switches, migrations and major
      // faults may truly be 0 for a 4 MiB load.
      EXPECT_GT(counters[name].get<uint64_t>(), 0u) << name;
    }
  }
  EXPECT_TRUE(runs[0]["timeline"].is_null());
  EXPECT_FALSE(fs::exists(out + "/timelines"));
}

struct TimelineRow {
  double t;
  uint64_t rss;
};

std::vector<TimelineRow> ReadTimeline(const std::string& path) {
  std::vector<TimelineRow> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("t_s,rss_bytes,rss_anon_bytes,rss_file_bytes", 0), 0u) << line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    TimelineRow r{};
    char comma;
    ss >> r.t >> comma >> r.rss;
    EXPECT_TRUE(ss) << line;
    rows.push_back(r);
  }
  return rows;
}

// Two workers at once, sampled every 2 ms: one case checks timelines and memory sharing both.
TEST_F(MeasureRunTest, TimelinesRiseAndConcurrentMappingsSharePages) {
  const uint64_t bytes = 96u << 20;
  const std::string file = Generate(bytes);
  const std::string out = dir_ + "/out";
  ASSERT_EQ(Run("run --file " + file +
                " --strategies fread,mmap --cache warm --reps 1 --procs 2 "
                "--sample-ms 2 --counters none --out " +
                out),
            0)
      << Slurp(dir_ + "/stderr.txt");
  const auto runs = Runs(out);
  ASSERT_EQ(runs.size(), 4u);
  std::map<std::string, int> per_strategy;
  for (const Json& r : runs) {
    SCOPED_TRACE(r.dump());
    ASSERT_EQ(r["status"], "ok");
    EXPECT_EQ(r["procs"], 2);
    ++per_strategy[r["strategy"]];

    ASSERT_TRUE(r["timeline"].is_string());
    const auto rows = ReadTimeline(out + "/" + r["timeline"].get<std::string>());
    ASSERT_GE(rows.size(), 3u);
    for (size_t i = 1; i < rows.size(); ++i) EXPECT_GT(rows[i].t, rows[i - 1].t) << i;
    // During the load (t >= 0) RSS grows by most of the file.
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& row : rows) {
      if (row.t < 0) continue;
      lo = std::min(lo, row.rss);
      hi = std::max(hi, row.rss);
    }
    EXPECT_GT(hi, lo + bytes / 2) << "RSS did not rise during the load";

    const Json& m = r["memory"];
    if (r["strategy"] == "mmap") {
      // Both workers map the same cached pages: each is charged about half of them. The file
      // pages counted include the binary's own, which the runner shares too (a third each, for
      // as much of it as is resident: all of it where nothing pages it out), so the lower bound
      // is half the model's pages, not a share of rss_file.
      const double rss_file = m["rss_file_bytes"].get<double>();
      const double pss_file = m["pss_file_bytes"].get<double>();
      EXPECT_GT(rss_file, 0.9 * bytes);
      EXPECT_GT(pss_file, 0.4 * bytes);
      EXPECT_LT(pss_file, 0.65 * rss_file);
    } else {
      // Each fread worker holds its own copy: all of it private, PSS equal to RSS.
      const double rss_anon = m["rss_anon_bytes"].get<double>();
      EXPECT_GT(rss_anon, 0.9 * bytes);
      EXPECT_GT(m["private_dirty_bytes"].get<double>() + m["private_clean_bytes"].get<double>(),
                0.95 * rss_anon);
      EXPECT_GT(m["pss_anon_bytes"].get<double>(), 0.95 * rss_anon);
    }
    EXPECT_TRUE(m["page_cache_growth_bytes"].is_number());
    EXPECT_TRUE(m["file_cache_growth_bytes"].is_number());
  }
  EXPECT_EQ(per_strategy["fread"], 2);
  EXPECT_EQ(per_strategy["mmap"], 2);
}

}  // namespace
}  // namespace loadbench
