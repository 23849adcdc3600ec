#include "harness/process/cgroup.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
// Charges the kernel must not fail (__GFP_NOFAIL, some kernel memory) may pass the limit.
constexpr uint64_t kPeakSlackBytes = 2 * kMiB;
constexpr uid_t kNobody = 65534;

// Child exit codes, so that a failure says which step failed.
constexpr int kJoinFailed = 126;
constexpr int kOomAdjFailed = 125;
constexpr int kMapFailed = 124;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

// Forks a child that joins `cg` as a worker would, touches `bytes` of anonymous memory in
// 1 MiB steps and exits 0; returns its wait status. The child uses only async-signal-safe
// calls (and mmap/memset), as the runner's child must.
int RunToucher(const MemoryCgroup& cg, uint64_t bytes) {
  const char* procs = cg.procs_path().c_str();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!JoinCgroupFromChild(procs)) ::_exit(kJoinFailed);
    if (!SetOomScoreAdjFromChild(1000)) ::_exit(kOomAdjFailed);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) ::_exit(kMapFailed);
    char* mem = static_cast<char*>(p);
    for (uint64_t off = 0; off < bytes; off += kMiB) std::memset(mem + off, 1, kMiB);
    ::_exit(0);
  }
  EXPECT_GT(pid, 0) << "fork: " << std::strerror(errno);
  return pid > 0 ? WaitFor(pid) : -1;
}

class MemoryCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "memory cgroups need root";
    std::string reason = MemoryCgroupUnsupportedReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

TEST_F(MemoryCgroupTest, TouchingPastTheLimitIsAnOomKill) {
  std::unique_ptr<MemoryCgroup> cg;
  Status s = MemoryCgroup::Create(64 * kMiB, &cg);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string dir = cg->path();
  ASSERT_TRUE(Exists(dir)) << dir;
  const std::optional<uint64_t> system_before = SystemOomKills();

  int status = RunToucher(*cg, 512 * kMiB);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  std::optional<uint64_t> kills = cg->OomKills();
  ASSERT_TRUE(kills.has_value()) << dir << " has no oom_kill count";
  EXPECT_GE(*kills, 1u);
  std::optional<uint64_t> peak = cg->PeakBytes();
  ASSERT_TRUE(peak.has_value()) << dir << " has no peak";
  EXPECT_GT(*peak, 0u);
  EXPECT_LE(*peak, 64 * kMiB + kPeakSlackBytes);
  if (system_before) {
    std::optional<uint64_t> system_after = SystemOomKills();
    ASSERT_TRUE(system_after.has_value());
    EXPECT_GE(*system_after, *system_before + 1);
  }

  cg.reset();
  EXPECT_FALSE(Exists(dir)) << dir << " was not removed";
}

TEST_F(MemoryCgroupTest, TouchingUnderTheLimitSurvivesAndIsCounted) {
  std::unique_ptr<MemoryCgroup> cg;
  Status s = MemoryCgroup::Create(256 * kMiB, &cg);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string dir = cg->path();

  int status = RunToucher(*cg, 8 * kMiB);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  if (std::optional<uint64_t> kills = cg->OomKills()) {
    EXPECT_EQ(*kills, 0u);
  }
  std::optional<uint64_t> peak = cg->PeakBytes();
  ASSERT_TRUE(peak.has_value()) << dir << " has no peak";
  EXPECT_GE(*peak, 8 * kMiB);

  EXPECT_TRUE(cg->Remove().ok());
  EXPECT_FALSE(Exists(dir)) << dir << " was not removed";
  EXPECT_TRUE(cg->Remove().ok()) << "a second Remove must do nothing";
}

// The child lands in the group, and the score is written in decimal (raising it needs no
// privilege, so 7 then 1000 always works).
TEST_F(MemoryCgroupTest, ChildJoinsAndSetsOomScoreAdj) {
  std::unique_ptr<MemoryCgroup> cg;
  Status s = MemoryCgroup::Create(256 * kMiB, &cg);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string name = cg->path().substr(cg->path().rfind('/'));  // "/loadbench-..."
  const char* procs = cg->procs_path().c_str();
  pid_t pid = ::fork();
  if (pid == 0) {
    // Single-threaded here, so the checks may allocate.
    if (!JoinCgroupFromChild(procs)) ::_exit(kJoinFailed);
    if (Slurp("/proc/self/cgroup").find(name + "\n") == std::string::npos) ::_exit(1);
    if (!SetOomScoreAdjFromChild(7) || Slurp("/proc/self/oom_score_adj") != "7\n") ::_exit(2);
    if (!SetOomScoreAdjFromChild(1000) || Slurp("/proc/self/oom_score_adj") != "1000\n") {
      ::_exit(3);
    }
    ::_exit(0);
  }
  ASSERT_GT(pid, 0) << "fork: " << std::strerror(errno);
  int status = WaitFor(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: not in the group, 2: 7 not written, 3: 1000 not written, 126: join failed";
  EXPECT_FALSE(JoinCgroupFromChild("/nonexistent/cgroup.procs"));
  EXPECT_FALSE(SetOomScoreAdjFromChild(-1));
  EXPECT_EQ(errno, EINVAL);
}

// Without root the reason is given, and names why: the hierarchy cannot be written.
TEST_F(MemoryCgroupTest, UnprivilegedProcessGetsAReason) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(1);
    std::string reason = MemoryCgroupUnsupportedReason();
    bool written =
        ::write(fds[1], reason.data(), reason.size()) == static_cast<ssize_t>(reason.size());
    ::_exit(written ? 0 : 2);
  }
  ::close(fds[1]);
  ASSERT_GT(pid, 0) << "fork: " << std::strerror(errno);
  std::string reason;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0) << std::strerror(errno);
    reason.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = WaitFor(pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "1: could not drop root, 2: short write";
  EXPECT_NE(reason.find(std::strerror(EACCES)), std::string::npos) << reason;
}

TEST(MemoryCgroupLimitTest, ZeroMakesAGroupWithNoLimitOfItsOwn) {
  std::unique_ptr<MemoryCgroup> cg;
  Status s = MemoryCgroup::Create(0, &cg);
  if (s.code() == Status::Code::kUnsupported) GTEST_SKIP() << s.message();
  ASSERT_TRUE(s.ok()) << s.message();
  const bool v2 = std::string(cg->version()) == "v2";
  std::ifstream in(cg->path() + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  std::string limit;
  in >> limit;
  if (v2) {
    EXPECT_EQ(limit, "max");
  } else {
    EXPECT_GE(std::stoull(limit), uint64_t{1} << 60) << limit;  // v1's "unlimited"
  }
  EXPECT_TRUE(cg->Remove().ok());
}

}  // namespace
}  // namespace loadbench
