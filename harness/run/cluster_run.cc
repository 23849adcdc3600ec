#include "harness/run/cluster_run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "harness/launch/job.h"
#include "harness/leftovers/leftovers.h"
#include "harness/net/cluster.h"
#include "harness/process/child.h"
#include "harness/process/interrupt.h"
#include "harness/process/locks.h"
#include "harness/run/session.h"
#include "loaders/base/proc_fields.h"
#include "loaders/base/units.h"
#include "loaders/blocks/peers.h"

namespace loadbench {
namespace {

// The largest model of the experiment, in bytes (a generated one as planned).
uint64_t LargestModel(const Experiment& e) {
  uint64_t most = 0;
  for (const ExperimentFile& f : e.files) {
    struct stat st {};
    const uint64_t bytes = f.generate                         ? f.file_bytes
                           : ::stat(f.path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size)
                                                              : 0;
    most = std::max(most, bytes);
  }
  return most;
}

// What stops a cluster before anything is made: no MPI, no mpirun, nodes whose copies and the
// store's page cache do not fit in memory.
Status CheckCluster(const Experiment& e, std::string* mpirun) {
  if (std::string why = MpiUnavailableReason(); !why.empty()) {
    return Status::BadInput(
        fmt::format("{}: a [cluster] runs one MPI rank per node, but {}", e.path, why));
  }
  if (Status s = FindProgram("mpirun", "openmpi-bin", mpirun); !s.ok()) {
    return Status::BadInput(
        fmt::format("{}: a [cluster] runs its nodes as MPI ranks: {}", e.path, s.message()));
  }
  const int nodes = *std::max_element(e.cluster.nodes.begin(), e.cluster.nodes.end());
  const uint64_t model = LargestModel(e), available = MeminfoBytes("MemAvailable").value_or(0);
  if (available > 0 && (nodes + 1) * model > available) {
    return Status::BadInput(fmt::format(
        "{}: {} nodes each hold a copy of the {} model, with the store's page cache {}; this "
        "machine has {} available",
        e.path, nodes, FormatBytes(model), FormatBytes((nodes + 1) * model),
        FormatBytes(available)));
  }
  return Status::Ok();
}

// This command's own argv, as it was started.
std::vector<std::string> OwnArgs() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  return args;
}

// The cluster made and measured, its description in the ranks' environment.
Status MakeCluster(const Experiment& e, const ExecuteOptions& o, std::unique_ptr<Cluster>* c) {
  const int nodes = *std::max_element(e.cluster.nodes.begin(), e.cluster.nodes.end());
  LB_RETURN_IF_ERROR(Cluster::Make(nodes, e.cluster.nic, e.cluster.uplink, c));
  fmt::print(stderr,
             "{}: cluster of {} node{} (NIC {}) and a store (uplink {}) in {}; measuring each "
             "link both ways (iperf3, {} s each)\n",
             o.who, nodes, nodes == 1 ? "" : "s", e.cluster.nic, e.cluster.uplink, (*c)->subnet(),
             e.cluster.seconds);
  LB_RETURN_IF_ERROR((*c)->MeasureLinks(e.cluster.streams, e.cluster.seconds));
  const nlohmann::ordered_json env = (*c)->Env();
  for (const auto& link : env["links"]) {
    fmt::print(stderr, "{}:   {} ({}): in {:.0f} Mbit/s, out {:.0f} Mbit/s\n", o.who,
               link["name"].get<std::string>(), link["rate"].get<std::string>(),
               link["iperf3"]["down_bits_per_s"].get<double>() / 1e6,
               link["iperf3"]["up_bits_per_s"].get<double>() / 1e6);
  }
  std::vector<std::string> peers;
  for (int k = 0; k < nodes; ++k) peers.push_back((*c)->node_address(k));
  ::setenv(kClusterVar, env.dump().c_str(), 1);
  ::setenv(kPeersVar, fmt::format("{}", fmt::join(peers, ",")).c_str(), 1);
  return Status::Ok();
}

}  // namespace

std::vector<std::string> MpirunArgv(const std::string& mpirun, const std::string& exe,
                                    const std::vector<std::string>& netns,
                                    const std::string& subnet,
                                    const std::vector<std::string>& args) {
  std::vector<std::string> hosts;
  for (const std::string& ns : netns) hosts.push_back(ns + ":1");
  std::vector<std::string> argv = {mpirun, "-np", std::to_string(netns.size()), "--host",
                                   fmt::format("{}", fmt::join(hosts, ","))};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
  for (const std::vector<std::string>& mca :
       {std::vector<std::string>{"plm_rsh_agent", exe + " netns-exec"},
        {"plm_rsh_no_tree_spawn", "1"},
        // No topology in shared memory: several nodes' daemons on one machine crash writing it
        // at one address; the ranks are not bound anyway (--bind-to none).
        {"rtc", "^hwloc"},
        // A node whose daemon never reports back fails the command instead of holding it.
        {"orte_startup_timeout", "60"},
        {"oob_tcp_if_include", subnet},
        {"btl", "tcp,self"},
        {"btl_tcp_if_include", subnet}}) {
    argv.insert(argv.end(), {"--mca", mca[0], mca[1]});
  }
  argv.insert(argv.end(), {"--map-by", "node", "--bind-to", "none", "-x", kClusterVar, "-x",
                           kPeersVar, "-x", "PATH", exe});
  argv.insert(argv.end(), args.begin() + 1, args.end());
  return argv;
}

int ExecuteOnCluster(const Experiment& e, const ExecuteOptions& o) {
  InstallInterruptHandlers();
  std::string mpirun;
  if (Status s = CheckCluster(e, &mpirun); !s.ok()) {
    fmt::print(stderr, "{}: {}\n", o.who, s.message());
    return 2;
  }
  std::unique_ptr<Cluster> cluster;
  {
    // The machine for this command while the cluster is made and measured; the ranks' rank 0
    // takes it again for the runs.
    HeldLock lock;
    Status s = BeginMeasurement(o.who, ThisProcess(o.command_line, o.out_dir), o.wait, &lock);
    if (s.ok()) s = MakeCluster(e, o, &cluster);
    if (!s.ok()) {
      fmt::print(stderr, "{}: {}\n", o.who, s.message());
      return Interrupted() ? 130 : s.exit_code();
    }
  }
  std::vector<std::string> netns;
  for (int k = 0; k < cluster->nodes(); ++k) netns.push_back(cluster->node_netns(k));
  const std::string exe = SelfExe();
  pid_t pid = -1;
  if (Status s =
          StartCommandGroup(MpirunArgv(mpirun, exe, netns, cluster->subnet(), OwnArgs()), &pid);
      !s.ok()) {
    fmt::print(stderr, "{}: {}\n", o.who, s.message());
    return 2;
  }
  return WaitForCommandGroup(pid);
}

}  // namespace loadbench
