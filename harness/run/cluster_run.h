// An experiment with a [cluster] (docs/fleet.md), started as any other: `loadbench experiment
// FILE`. Outside MPI the command builds the cluster (harness/net/cluster.h), measures each of
// its links, and runs the experiment again under mpirun, one rank per node, as a user with real
// hosts would (`mpirun --host ...`): mpirun's remote shell is `loadbench netns-exec`, which
// enters the node's namespace where ssh would log in to a host, and MPI's own traffic (out of
// band and TCP transport) is held to the cluster's subnet, so that it crosses the shaped NICs
// as on a real cluster. The ranks find the cluster in LOADBENCH_CLUSTER (env.json's `cluster`)
// and the nodes' addresses in LOADBENCH_FLEET_PEERS. When mpirun ends, or the command is
// interrupted, mpirun's process group is killed, then every namespace with what still runs in
// it.
#pragma once

#include <string>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/run/executor.h"

namespace loadbench {

// The variable the ranks find the cluster in (the nodes' addresses are in
// loaders/blocks/peers.h kPeersVar).
inline constexpr const char* kClusterVar = "LOADBENCH_CLUSTER";

// The whole command: exit 2 before anything is made (no mpirun, not root, more nodes than the
// memory holds, a rate tc refuses), else mpirun's exit code (rank 0's: Execute's contract). It
// holds the machine lock from before the cluster is made until mpirun has ended, lent to the
// ranks (process/locks.h LendMachineLock).
int ExecuteOnCluster(const Experiment& e, const ExecuteOptions& o);

// The cluster a rank runs on, from LOADBENCH_CLUSTER (env.json's `cluster`, as
// ExecuteOnCluster sets it): null when the variable is not set. kBadInput naming the variable
// when it is set but is not such a cluster (a JSON object with `nodes`, `nic`, `uplink`, a
// `store` and a `node_list` of namespaces named loadbench-* at link-local addresses, `links`),
// or when this process is not a rank of the cluster run that set it: not started by an MPI
// launcher, no running loadbench command lists the cluster's namespaces in its journal, or it
// runs in none of its nodes' namespaces.
Status ClusterOfThisRank(nlohmann::ordered_json* out);

// mpirun's command line for `nodes` ranks, one in each of `netns`, reaching them through `exe`
// netns-exec, MPI's traffic held to `subnet`, running `args` (argv[0] the binary).
std::vector<std::string> MpirunArgv(const std::string& mpirun, const std::string& exe,
                                    const std::vector<std::string>& netns,
                                    const std::string& subnet,
                                    const std::vector<std::string>& args);

}  // namespace loadbench
