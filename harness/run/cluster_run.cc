#include "harness/run/cluster_run.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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
#include "harness/process/journal.h"
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

using Json = nlohmann::ordered_json;

// Why `entry` (env.json's `store`, or one of `node_list`) is not a namespace of a cluster's, or "".
std::string NotANamespace(const Json& entry, const std::string& what) {
  if (!entry.is_object()) return what + " is not an object";
  const Json netns = entry.value("netns", Json()), address = entry.value("address", Json());
  if (!netns.is_string() || !netns.get<std::string>().starts_with("loadbench-") ||
      netns.get<std::string>().find_first_of("/.") != std::string::npos) {
    return what + ".netns is not a network namespace of loadbench's own (loadbench-...)";
  }
  in_addr a{};
  if (!address.is_string() || !address.get<std::string>().starts_with("169.254.") ||
      ::inet_pton(AF_INET, address.get<std::string>().c_str(), &a) != 1) {
    return what + ".address is not a link-local IPv4 address (169.254.X.Y)";
  }
  return "";
}

// Why `c` is not a cluster as Cluster::Env describes one (the keys this code reads), or "".
std::string NotACluster(const Json& c) {
  if (!c.is_object()) return "not a JSON object";
  const Json nodes = c.value("nodes", Json());
  if (!nodes.is_number_integer() || nodes.get<int>() < 1 || nodes.get<int>() > kMaxClusterNodes) {
    return fmt::format("`nodes` is not a count of 1 to {}", kMaxClusterNodes);
  }
  for (const char* key : {"nic", "uplink"}) {
    if (!c.value(key, Json()).is_string()) return fmt::format("`{}` is not a rate", key);
  }
  if (std::string why = NotANamespace(c.value("store", Json()), "store"); !why.empty()) return why;
  const Json list = c.value("node_list", Json());
  if (!list.is_array() || list.size() != nodes.get<size_t>()) {
    return "`node_list` does not list the `nodes` nodes";
  }
  for (size_t k = 0; k < list.size(); ++k) {
    std::string why = NotANamespace(list[k], fmt::format("node_list[{}]", k));
    if (!why.empty()) return why;
  }
  if (!c.value("links", Json()).is_array()) return "`links` is not a list";
  return "";
}

}  // namespace

Status ClusterOfThisRank(nlohmann::ordered_json* out) {
  *out = Json();
  const char* text = std::getenv(kClusterVar);
  if (text == nullptr) return Status::Ok();
  const auto bad = [](const std::string& why) {
    return Status::BadInput(fmt::format("{}: {}", kClusterVar, why));
  };
  Json c = Json::parse(text, nullptr, false);
  if (std::string why = NotACluster(c); !why.empty()) return bad(why);
  if (!LaunchedByMpi()) {
    return bad("set, but this command is not a rank that loadbench started on a cluster it "
               "made; unset it");
  }
  // The namespaces are the cluster's only when a loadbench command that still runs made them (its
  // journal lists them: only root's journals, for root), and this rank runs in one of its nodes.
  std::vector<std::string> names = {c["store"]["netns"].get<std::string>()};
  for (const Json& node : c["node_list"]) names.push_back(node["netns"].get<std::string>());
  const JournalLines made = RunningJournalListing(Leftover::kNetns, names[0]);
  for (const std::string& name : names) {
    if (std::find(made.begin(), made.end(), std::pair{Leftover::kNetns, name}) == made.end()) {
      return bad(fmt::format("names namespace {}, which no running loadbench command made", name));
    }
  }
  if (std::none_of(names.begin() + 1, names.end(), InNetns)) {
    return bad("this rank runs in none of the cluster's nodes' namespaces");
  }
  *out = std::move(c);
  return Status::Ok();
}

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
                           kPeersVar, "-x", kLockHolderVar, "-x", "PATH", exe});
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
  // The machine for this command from before the cluster is made until its last rank is done,
  // lent to the ranks (rank 0 measures under it); declared first, so that it is let go only
  // after the cluster is removed.
  HeldLock lock;
  std::unique_ptr<Cluster> cluster;
  Status s = BeginMeasurement(o.who, ThisProcess(o.command_line, o.out_dir), o.wait, &lock);
  if (s.ok()) s = MakeCluster(e, o, &cluster);
  if (s.ok()) s = LendMachineLock(lock);
  if (!s.ok()) {
    fmt::print(stderr, "{}: {}\n", o.who, s.message());
    return Interrupted() ? 130 : s.exit_code();
  }
  std::vector<std::string> netns;
  for (int k = 0; k < cluster->nodes(); ++k) netns.push_back(cluster->node_netns(k));
  const std::string exe = SelfExe();
  pid_t pid = -1;
  if (s = StartCommandGroup(MpirunArgv(mpirun, exe, netns, cluster->subnet(), OwnArgs()), &pid);
      !s.ok()) {
    fmt::print(stderr, "{}: {}\n", o.who, s.message());
    return 2;
  }
  return WaitForCommandGroup(pid);
}

}  // namespace loadbench
