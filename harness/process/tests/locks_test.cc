// The machine and results-folder locks, the leftovers journal, and results that a full disk
// cannot tear: each with a process that dies holding what it held, as a SIGKILL leaves it.
#include "harness/process/locks.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/leftovers/leftovers.h"
#include "harness/record/results.h"
#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

// Every test with a lock folder of its own, the one before restored after.
class LocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* before = std::getenv("LOADBENCH_LOCK_DIR");
    before_ = before ? before : "";
    ::setenv("LOADBENCH_LOCK_DIR", dir_.File("locks").c_str(), 1);
  }
  void TearDown() override { ::setenv("LOADBENCH_LOCK_DIR", before_.c_str(), 1); }

  // A child that takes the lock at `path` and then waits to be killed; returns its pid once it
  // holds the lock.
  pid_t ChildHolding(const std::string& path) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      HeldLock lock;
      LockHolder other;
      if (!TryLock(path, ThisProcess("holder --out x", "x"), &lock, &other).ok() || !lock.held()) {
        ::_exit(1);
      }
      (void)!::write(ready[1], "r", 1);
      ::pause();
      ::_exit(0);
    }
    char c;
    EXPECT_EQ(::read(ready[0], &c, 1), 1);
    ::close(ready[0]);
    ::close(ready[1]);
    return pid;
  }

  static void Kill(pid_t pid) {
    ::kill(pid, SIGKILL);
    int status;
    ::waitpid(pid, &status, 0);
  }

  test::TempDir dir_;
  std::string before_;
};

TEST_F(LocksTest, SecondTakerLearnsWhoHoldsItAndTakesItOnceReleased) {
  std::string lock_dir;
  ASSERT_TRUE(LockDir(&lock_dir).ok());
  const std::string path = lock_dir + "/x.lock";
  const pid_t holder = ChildHolding(path);
  HeldLock mine;
  LockHolder other;
  ASSERT_TRUE(TryLock(path, ThisProcess("me", ""), &mine, &other).ok());
  EXPECT_FALSE(mine.held());
  EXPECT_EQ(other.pid, holder);
  EXPECT_EQ(other.command, "holder --out x");
  EXPECT_EQ(other.out_dir, "x");
  EXPECT_NE(other.Describe().find("pid " + std::to_string(holder) +
                                  " (`holder --out x`, results "
                                  "in x, since "),
            std::string::npos)
      << other.Describe();
  Kill(holder);  // as SIGKILL leaves it: the file stays, the lock does not
  ASSERT_TRUE(TryLock(path, ThisProcess("me", ""), &mine, &other).ok());
  EXPECT_TRUE(mine.held());
  mine.Release();
  struct stat st {};
  EXPECT_NE(::stat(path.c_str(), &st), 0) << "a released lock's file is removed";
}

TEST_F(LocksTest, NoWaitRefusesNamingTheMeasurement) {
  std::string lock_dir;
  ASSERT_TRUE(LockDir(&lock_dir).ok());
  const pid_t holder = ChildHolding(lock_dir + "/measure.lock");
  HeldLock mine;
  const Status s = LockMachine("test", ThisProcess("me", ""), /*wait=*/false, &mine);
  Kill(holder);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("another measurement is running on this machine: pid " +
                             std::to_string(holder)),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(LockMachine("test", ThisProcess("me", ""), false, &mine).ok());
  EXPECT_TRUE(mine.held());
}

TEST_F(LocksTest, ResultsFolderHasOneWriter) {
  const std::string out = dir_.File("out");
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  const pid_t holder = ChildHolding(out + "/.loadbench.lock");
  HeldLock mine;
  const Status s = LockResultsFolder(out, ThisProcess("me", out), &mine);
  Kill(holder);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(out + ": another loadbench is writing there: pid " +
                             std::to_string(holder)),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(LockResultsFolder(out, ThisProcess("me", out), &mine).ok());
}

TEST_F(LocksTest, WhatAKilledProcessLeftIsCleanedAndSaid) {
  const std::string kept = dir_.File("kept");
  const pid_t pid = ::fork();
  if (pid == 0) {
    TrackLeftover(Leftover::kFile, kept);  // made, then gone: struck off
    UntrackLeftover(Leftover::kFile, kept);
    const std::string scratch = TempSibling(dir_.File("model.wlf"));
    TrackLeftover(Leftover::kFile, scratch);
    std::ofstream(scratch) << "half";
    ::_exit(0);  // without cleaning up, as a SIGKILL would
  }
  const std::string scratch = dir_.File(fmt::format("model.wlf.tmp.{}", pid));
  int status;
  ::waitpid(pid, &status, 0);
  std::ofstream(kept) << "not a leftover";
  const std::vector<std::string> said = CleanLeftovers();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "pid " + std::to_string(pid) +
                         " ended without cleaning up: partly "
                         "written file " +
                         scratch);
  struct stat st {};
  EXPECT_NE(::stat(scratch.c_str(), &st), 0);
  EXPECT_EQ(::stat(kept.c_str(), &st), 0);
  EXPECT_TRUE(CleanLeftovers().empty()) << "the journal goes with what it listed";
}

TEST_F(LocksTest, JournalOfALiveProcessIsLeftAlone) {
  const std::string scratch = dir_.File("busy.tmp");
  TrackLeftover(Leftover::kFile, scratch);
  std::ofstream(scratch) << "mine, still being written";
  EXPECT_TRUE(CleanLeftovers().empty());
  struct stat st {};
  EXPECT_EQ(::stat(scratch.c_str(), &st), 0);
  UntrackLeftover(Leftover::kFile, scratch);
}

// In a child whose files may not grow past `limit` bytes (a full disk, as far as write(2) can
// tell: EFBIG after a partial write), runs `write` and exits with its status code.
int WithFileSizeLimit(rlim_t limit, const std::function<Status()>& write) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit rl{limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(100);
    ::_exit(static_cast<int>(write().code()));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(LocksTest, ARecordTheDiskCannotHoldIsTakenBackWhole) {
  const std::string path = dir_.File("runs.jsonl");
  {
    JsonlWriter w;
    ASSERT_TRUE(w.Open(path).ok());
    ASSERT_TRUE(w.Append({{"run_id", "first"}}).ok());
  }
  const std::string before = test::ReadWholeFile(path);
  const int code = WithFileSizeLimit(before.size() + 100, [&] {
    JsonlWriter w;
    Status s = w.Open(path);
    return s.ok() ? w.Append({{"run_id", std::string(4000, 'x')}}) : s;
  });
  EXPECT_EQ(code, static_cast<int>(Status::Code::kNotWritten));
  EXPECT_EQ(test::ReadWholeFile(path), before) << "the file ends with its last whole line";
}

TEST_F(LocksTest, AWholeFileTheDiskCannotHoldLeavesTheOldOne) {
  const std::string path = dir_.File("env.json");
  std::ofstream(path) << "{\"old\": true}\n";
  const int code =
      WithFileSizeLimit(1000, [&] { return WriteFileWhole(path, std::string(5000, ' ')); });
  EXPECT_EQ(code, static_cast<int>(Status::Code::kNotWritten));
  EXPECT_EQ(test::ReadWholeFile(path), "{\"old\": true}\n");
  struct stat st {};
  EXPECT_NE(::stat((path + ".tmp." + std::to_string(::getpid())).c_str(), &st), 0);
}

}  // namespace
}  // namespace loadbench
