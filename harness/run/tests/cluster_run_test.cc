// mpirun's command line for a cluster: one rank per node namespace, reached through
// `loadbench netns-exec`, MPI's traffic held to the cluster's subnet, the cluster and the nodes'
// addresses passed on to the ranks, and the command's own arguments after the binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/run/cluster_run.h"

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
  // The command itself, with the binary's own path, at the end.
  const std::vector<std::string> tail(argv.end() - 5, argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"/x/loadbench", "experiment", "f.toml", "--out", "r"}));
}

}  // namespace
}  // namespace loadbench
