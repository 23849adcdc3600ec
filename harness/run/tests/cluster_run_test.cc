// mpirun's command line for a cluster: one rank per node namespace, reached through
// `loadbench netns-exec`, MPI's traffic held to the cluster's subnet, the cluster, the nodes'
// addresses and the lent machine lock passed on to the ranks, and the command's own arguments
// after the binary. And the cluster a rank finds in LOADBENCH_CLUSTER, honoured only as the
// cluster's command wrote it, under that command.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/net/netns.h"
#include "harness/process/journal.h"
#include "harness/process/locks.h"
#include "harness/run/cluster_run.h"
#include "tests/support/saved_env.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

// The value after `flag value` (for --mca: after `--mca name`), "" when absent.
std::string After(const std::vector<std::string>& argv, const std::string& a,
                  const std::string& b = "") {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] != a) continue;
    if (b.empty()) return argv[i + 1];
    if (argv[i + 1] == b && i + 2 < argv.size()) return argv[i + 2];
  }
  return "";
}

TEST(ClusterRun, MpirunStartsOneRankPerNodeThroughNetnsExec) {
  const std::vector<std::string> argv =
      MpirunArgv("/usr/bin/mpirun", "/x/loadbench", {"loadbench-1c0-n0", "loadbench-1c0-n1"},
                 "169.254.7.0/24", {"loadbench", "experiment", "f.toml", "--out", "r"});
  EXPECT_EQ(argv.front(), "/usr/bin/mpirun");
  EXPECT_EQ(After(argv, "-np"), "2");
  EXPECT_EQ(After(argv, "--host"), "loadbench-1c0-n0:1,loadbench-1c0-n1:1");
  EXPECT_EQ(After(argv, "--mca", "plm_rsh_agent"), "/x/loadbench netns-exec");
  EXPECT_EQ(After(argv, "--mca", "oob_tcp_if_include"), "169.254.7.0/24");
  EXPECT_EQ(After(argv, "--mca", "btl_tcp_if_include"), "169.254.7.0/24");
  EXPECT_EQ(After(argv, "--mca", "btl"), "tcp,self");
  EXPECT_EQ(After(argv, "--bind-to"), "none");
  EXPECT_NE(std::find(argv.begin(), argv.end(), std::string(kClusterVar)), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), std::string(kLockHolderVar)), argv.end());
  // The command itself, with the binary's own path, at the end.
  const std::vector<std::string> tail(argv.end() - 5, argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"/x/loadbench", "experiment", "f.toml", "--out", "r"}));
}

// A cluster as Cluster::Env describes one, of one node, named after `id`.
nlohmann::ordered_json ClusterJson(const std::string& id) {
  return {{"nodes", 1},
          {"nic", "200mbit"},
          {"uplink", "400mbit"},
          {"store", {{"netns", id + "-store"}, {"address", "169.254.7.1"}}},
          {"node_list", {{{"node", 0}, {"netns", id + "-n0"}, {"address", "169.254.7.10"}}}},
          {"links", nlohmann::ordered_json::array()}};
}

// What ClusterOfThisRank makes of LOADBENCH_CLUSTER=`text` in a child, as a rank of an MPI job
// when `rank`, in network namespace `netns` when given: "ok" or its message.
std::string RankSees(const std::string& text, bool rank, const std::string& netns = "") {
  int fds[2];
  if (::pipe(fds) != 0) return "no pipe";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv(kClusterVar, text.c_str(), 1);
    if (rank) ::setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    const int ns = netns.empty() ? -1 : ::open(("/run/netns/" + netns).c_str(), O_RDONLY);
    if (ns >= 0 && ::setns(ns, CLONE_NEWNET) != 0) ::_exit(1);
    nlohmann::ordered_json c;
    const Status s = ClusterOfThisRank(&c);
    const std::string said = s.ok() && c.is_object() ? "ok" : s.message();
    (void)!::write(fds[1], said.data(), said.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[1024] = {};
  (void)!::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return buf;
}

// Every test with a lock folder (and journals) of its own.
class ClusterVar : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("LOADBENCH_LOCK_DIR", dir_.File("locks").c_str(), 1); }
  test::SavedEnv env_{{"LOADBENCH_LOCK_DIR", kLockHolderVar}};
  test::TempDir dir_;
};

TEST_F(ClusterVar, IsHonouredOnlyAsTheClustersCommandWroteIt) {
  const std::string id = fmt::format("loadbench-{}c5", ::getpid());
  nlohmann::ordered_json c = ClusterJson(id);
  // Not a rank: refused, however well formed.
  EXPECT_EQ(RankSees(c.dump(), false),
            "LOADBENCH_CLUSTER: set, but this command is not a rank that loadbench started on a "
            "cluster it made; unset it");
  // A rank, but no running command made those namespaces.
  EXPECT_EQ(RankSees(c.dump(), true),
            fmt::format("LOADBENCH_CLUSTER: names namespace {}-store, which no running "
                        "loadbench command made",
                        id));
  TrackLeftover(Leftover::kNetns, id + "-store");
  TrackLeftover(Leftover::kNetns, id + "-n0");
  // Made by this (running) process, but the rank is not inside one of its nodes.
  EXPECT_EQ(RankSees(c.dump(), true),
            "LOADBENCH_CLUSTER: this rank runs in none of the cluster's nodes' namespaces");
  if (CanMakeNetworks("a test cluster").ok() &&
      RunIpRoute("ip", {"netns", "add", id + "-n0"}).ok()) {
    EXPECT_EQ(RankSees(c.dump(), true, id + "-n0"), "ok");
    (void)RunIpRoute("ip", {"netns", "del", id + "-n0"});
  }
  // Malformed: each says what is wrong, naming the variable.
  EXPECT_EQ(RankSees("[1, 2]", true), "LOADBENCH_CLUSTER: not a JSON object");
  c["store"]["netns"] = "../etc";
  EXPECT_EQ(RankSees(c.dump(), true),
            "LOADBENCH_CLUSTER: store.netns is not a network namespace of loadbench's own "
            "(loadbench-...)");
  c = ClusterJson(id);
  c["node_list"][0]["address"] = "10.0.0.1";
  EXPECT_EQ(RankSees(c.dump(), true),
            "LOADBENCH_CLUSTER: node_list[0].address is not a link-local IPv4 address "
            "(169.254.X.Y)");
  c = ClusterJson(id);
  c["nodes"] = 2;
  EXPECT_EQ(RankSees(c.dump(), true),
            "LOADBENCH_CLUSTER: `node_list` does not list the `nodes` nodes");
  UntrackLeftover(Leftover::kNetns, id + "-n0");
  UntrackLeftover(Leftover::kNetns, id + "-store");
}

// The machine lock, lent by name: a process below the lender measures under it; the name alone,
// without the lender above, takes nothing.
TEST_F(ClusterVar, TheLentMachineLockIsAdoptedOnlyBelowItsHolder) {
  HeldLock mine;
  ASSERT_TRUE(LockMachine("test", ThisProcess("cluster", ""), false, &mine).ok());
  ASSERT_TRUE(LendMachineLock(mine).ok());
  const auto child_takes = [](bool lent) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (!lent) ::setenv(kLockHolderVar, "1-0", 1);  // init, as if it had lent it
      HeldLock theirs;
      const Status s = LockMachine("rank", ThisProcess("rank 0", ""), false, &theirs);
      ::_exit(s.ok() && theirs.held() ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  EXPECT_TRUE(child_takes(true));
  EXPECT_FALSE(child_takes(false));
  // Still this process's: the child adopted it and let it be.
  HeldLock again;
  LockHolder other;
  std::string dir;
  ASSERT_TRUE(LockDir(&dir).ok());
  ASSERT_TRUE(TryLock(dir + "/measure.lock", ThisProcess("x", ""), &again, &other).ok());
  EXPECT_FALSE(again.held());
}

}  // namespace
}  // namespace loadbench
