// The one record completion: the same judgement for a worker on this machine, a command and a
// rank's reader under MPI.
#include "harness/measure/complete.h"

#include <signal.h>

#include <string>

#include <gtest/gtest.h>

#include "harness/launch/ranks.h"

namespace loadbench {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CompleteTest : public ::testing::Test {
 protected:
  CompleteTest() {
    point_.spec.name = "fread";
    point_.spec.text = "fread";
    point_.cache = "cold";
    base_.run_id = "20261202T000000-0001";
    base_.experiment = "e";
    base_.strategy = base_.strategy_spec = "fread";
    base_.params = {{"chunk", 4096}};
    base_.file = "/m.wlf";
    base_.file_bytes = 1000;
    base_.cache = "cold";
    base_.rep = 2;
    base_.started_at = "2026-12-02T00:00:00.000Z";
    host_.ok = true;
    host_.drop_method = "drop_caches";
    host_.pages_before = 0;
    host_.pages_after = 3;
    host_.resident_after = 1.0;
    host_.cached_before = 100;
    host_.cached_after = 4196;
  }

  // A reader that loaded well: its own record, its host around it.
  ReaderOutcome Loaded() const {
    ReaderOutcome o;
    o.record.status = "ok";
    o.record.params = {{"chunk", 8192}};
    o.record.wall_s = 0.5;
    o.record.read_bytes = 1000;
    o.process_s = 0.75;
    o.usage.ru_minflt = 7;
    o.host = host_;
    return o;
  }

  RunRecord Judge(ReaderOutcome o, size_t k = 0) {
    const Judging j = {&point_, nullptr, true};
    return Complete(base_, j, k, o);
  }

  RunPoint point_;
  RunRecord base_;
  HostState host_;
};

TEST_F(CompleteTest, TheRunnersIdentityAndTheReadersOwnFigures) {
  point_.procs = 2;
  const RunRecord r = Judge(Loaded(), 1);
  EXPECT_EQ(r.status, "ok");
  EXPECT_EQ(r.run_id, base_.run_id);
  EXPECT_EQ(r.file, "/m.wlf");
  EXPECT_EQ(r.rep, 2);
  EXPECT_EQ(r.params["chunk"], 8192) << "the options the reader resolved are kept";
  EXPECT_EQ(r.proc, 1);
  EXPECT_EQ(r.process_s, 0.75);
  EXPECT_EQ(r.minor_faults, 7u);
  EXPECT_EQ(r.drop_method, "drop_caches");
  EXPECT_EQ(r.memory.file_cache_growth_bytes, 3 * 4096);
  EXPECT_EQ(r.memory.page_cache_growth_bytes, 4096);
  EXPECT_FALSE(r.memory.cgroup_peak_bytes.has_value());
  EXPECT_FALSE(r.host.has_value());
}

TEST_F(CompleteTest, AStartStateThatWasNotTheRunsIsInvalid) {
  ReaderOutcome o = Loaded();
  o.host.worst = 0.5;  // half the file resident at a cold start
  const RunRecord r = Judge(o);
  EXPECT_EQ(r.status, "invalid");
  EXPECT_TRUE(r.error.has_value());
}

TEST_F(CompleteTest, UnderMpiAnOomKillIsJudgedAsOnOneMachine) {
  ReaderOutcome o = Loaded();
  o.error = "worker killed by signal 9 (Killed)";
  o.signal = SIGKILL;
  o.host.oom_before = 4;
  o.host.oom_kills = 1;
  o.host_name = "node2";
  o.rank = 3;
  o.ranks = 4;
  o.cache_by_rank = 2;
  const RunRecord r = Judge(o);
  EXPECT_EQ(r.status, "failed");
  EXPECT_EQ(r.oom_killed, true);
  EXPECT_EQ(r.error, "killed by the OOM killer (SIGKILL): out of memory");
  EXPECT_EQ(r.host, "node2");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.cache_by_rank, 2);
  EXPECT_EQ(r.run_id, base_.run_id);
}

TEST_F(CompleteTest, AKillThatWasNotTheOomKillersStaysASignal) {
  ReaderOutcome o = Loaded();
  o.error = "worker killed by signal 9 (Killed)";
  o.signal = SIGKILL;
  o.host.oom_kills = 0;
  const RunRecord r = Judge(o);
  EXPECT_EQ(r.status, "failed");
  EXPECT_FALSE(r.oom_killed.has_value());
  EXPECT_EQ(r.error, o.error);
}

TEST_F(CompleteTest, AHostThatCouldNotBePreparedCountsForNothing) {
  ReaderOutcome o = Loaded();
  o.host.ok = false;
  o.host.error = "cleaning up after shm: Permission denied";
  o.host_name = "node2";
  RunRecord r = Judge(o);
  EXPECT_EQ(r.status, "invalid");
  EXPECT_EQ(r.error, "preparing the run on host node2: cleaning up after shm: Permission denied");
  EXPECT_FALSE(r.process_s.has_value());
  EXPECT_FALSE(r.wall_s.has_value()) << "nothing the reader measured may count";

  o.host_name.reset();
  r = Judge(o);
  EXPECT_EQ(r.error, "preparing the cold run: cleaning up after shm: Permission denied");

  o.host.unsupported = true;
  o.host.error = "no memory cgroup can be made here";
  r = Judge(o);
  EXPECT_EQ(r.status, "unsupported");
  EXPECT_EQ(r.error, "no memory cgroup can be made here");
}

TEST_F(CompleteTest, AWarmRunThatReadStorageIsInvalidOnlyWhereTheLauncherChecksIt) {
  point_.cache = "warm";
  base_.cache = "warm";
  ReaderOutcome o = Loaded();
  o.host.worst = 1.0;
  o.host.drop_method.reset();
  const StrategyInfo* fread = FindStrategy("fread");
  ASSERT_NE(fread, nullptr);
  Judging j = {&point_, fread, true};
  ReaderOutcome copy = o;
  EXPECT_EQ(Complete(base_, j, 0, copy).status, "invalid");
  j.check_warm_reads = false;  // a command: its own reads are its own
  copy = o;
  EXPECT_EQ(Complete(base_, j, 0, copy).status, "ok");
}

// A warm run of a strategy that bypasses the page cache reads storage by design: owned with
// direct=on is not invalid for it, nor with direct=auto where it opened a file with O_DIRECT
// (the file was not in the cache: its details say so); with direct=off, or auto having read
// through the cache, it is.
TEST_F(CompleteTest, AWarmRunPastThePageCacheIsNotInvalidForReadingStorage) {
  point_.cache = "warm";
  base_.cache = "warm";
  ReaderOutcome o = Loaded();
  o.host.worst = 1.0;
  o.host.drop_method.reset();
  const StrategyInfo* owned = FindStrategy("owned");
  ASSERT_NE(owned, nullptr);
  const Judging j = {&point_, owned, true};
  struct Case {
    const char* direct;
    int direct_files;
    const char* status;
  };
  for (const Case& c : {Case{"on", 1, "ok"}, Case{"auto", 1, "ok"}, Case{"auto", 0, "invalid"},
                        Case{"off", 0, "invalid"}}) {
    ReaderOutcome copy = o;
    copy.record.params = {{"direct", c.direct}};
    copy.record.details = {{"direct_files", c.direct_files}};
    EXPECT_EQ(Complete(base_, j, 0, copy).status, c.status) << c.direct << c.direct_files;
  }
}

TEST_F(CompleteTest, EveryReaderOfARunCarriesItsStartSpread) {
  point_.procs = 3;
  std::vector<RunRecord> run;
  for (double start : {1767225600.250010, 1767225600.249000, 1767225600.251500}) {
    ReaderOutcome o = Loaded();
    o.record.load_start_unix_s = start;
    run.push_back(Judge(o, run.size()));
  }
  ReaderOutcome gone = Loaded();
  gone.error = "worker killed by signal 9 (Killed)";  // never started its clock
  run.push_back(Judge(gone, run.size()));
  SetStartSpread(&run);
  for (const RunRecord& r : run) EXPECT_EQ(r.start_spread_s, 0.0025) << r.proc.value_or(-1);
  EXPECT_FALSE(run.back().load_start_unix_s.has_value());
  // One reader that started is no spread.
  run.erase(run.begin() + 1, run.end() - 1);
  run[0].start_spread_s.reset();
  run[1].start_spread_s.reset();
  SetStartSpread(&run);
  EXPECT_FALSE(run[0].start_spread_s.has_value());
}

TEST_F(CompleteTest, AColdCommandThatReadTooLittleFromStorageIsInvalid) {
  base_.file_bytes = 100 << 20;
  ReaderOutcome o = Loaded();
  o.record.read_bytes = 12 << 20;
  Judging j = {&point_, nullptr, false, true};
  ReaderOutcome copy = o;
  RunRecord r = Complete(base_, j, 0, copy);
  EXPECT_EQ(r.status, "invalid");
  EXPECT_EQ(r.error, "read 12.00 MiB of 100.00 MiB from storage (12.0%) on a cold run: it cannot "
                     "have loaded the model (need 90%, by the I/O counters of the command and "
                     "the processes it waited for)");
  copy = o;
  copy.record.read_bytes = 90 << 20;
  EXPECT_EQ(Complete(base_, j, 0, copy).status, "ok");
  copy = o;
  copy.record.read_bytes.reset();  // no counters: not judged, and said
  r = Complete(base_, j, 0, copy);
  EXPECT_EQ(r.status, "ok");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("no I/O counters"), std::string::npos);
  point_.cache = "warm";  // a warm run reads nothing from storage, rightly
  copy = o;
  copy.host.worst = 1.0;
  EXPECT_EQ(Complete(base_, j, 0, copy).status, "ok");
  point_.cache = "cold";
  j.check_cold_reads = false;  // the runner's own readers verify the bytes themselves
  copy = o;
  EXPECT_EQ(Complete(base_, j, 0, copy).status, "ok");
}

TEST(HostStateJsonTest, TheRanksSendEveryFigureBackAndForth) {
  HostState h;
  h.ok = true;
  h.resident_before = 0.25;
  h.worst = 0.5;
  h.pages_before = 12;
  h.drop_method = "fadvise";
  h.cached_before = 1;
  h.oom_before = 2;
  h.resident_after = 0.75;
  h.pages_after = 34;
  h.cached_after = 5;
  h.oom_kills = 1;
  const HostState back = HostStateOf(ParseRankJson(HostStateJson(h).dump()));
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.resident_before, 0.25);
  EXPECT_EQ(back.worst, 0.5);
  EXPECT_EQ(back.pages_before, 12u);
  EXPECT_EQ(back.drop_method, "fadvise");
  EXPECT_EQ(back.cached_before, 1u);
  EXPECT_EQ(back.oom_before, 2u);
  EXPECT_EQ(back.resident_after, 0.75);
  EXPECT_EQ(back.pages_after, 34u);
  EXPECT_EQ(back.cached_after, 5u);
  EXPECT_EQ(back.oom_kills, 1u);
  const HostState none = HostStateOf(ParseRankJson("not json"));
  EXPECT_FALSE(none.ok);
  EXPECT_TRUE(Has(none.error, "no state"));
}

}  // namespace
}  // namespace loadbench
