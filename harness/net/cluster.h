// A cluster on one machine: N nodes and one store, each a network namespace with one NIC (a
// veth pair) into a bridge in a fabric namespace of its own, as hosts on one switch. Every NIC
// is shaped both ways at its rate: the node's end (its upload) and the bridge's end (its
// download), so that each node has a NIC of its own and the store an uplink that all of them
// share. The shaper is HTB with small packets (acknowledgements, requests) in a class served
// first: with one queue (TBF, as a [link] has) a node that pulls from the store while it sends
// to another queues its acknowledgements and requests to the store behind 20 ms of its own
// data, and pulls at two thirds of its NIC (measured: docs/fleet.md), which a NIC's short
// hardware queue and a host's fair queueing spare a real one. The addresses are one link-local /24
// (169.254.X.0/24): the store .1, node k .(10 + k), the bridge .254, and .253 for this
// namespace, which joins the bridge unshaped (the head: where mpirun reaches the nodes from;
// harness/run/cluster_run.h).
//
// Everything is made through iproute2, journaled as a leftover before it is made, and removed
// when the Cluster goes (every process still inside a namespace killed first); a killed command
// leaves it to the next measuring command (leftovers/leftovers.h). Each node has a temporary
// folder of its own (/tmp/NETNS-XXXXXX, made by mkdtemp and journaled), which its processes get
// as TMPDIR (process/child.h ExecShellInNetns), removed with the cluster.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench {

inline constexpr int kMaxClusterNodes = 64;

class Cluster {
 public:
  // Makes `nodes` nodes with NICs at `nic` and the store behind `uplink` (ParseLinkRate's
  // text, "unshaped" refused). kBadInput before anything is left behind: not root, no ip or tc,
  // a rate tc refuses.
  static Status Make(int nodes, const std::string& nic, const std::string& uplink,
                     std::unique_ptr<Cluster>* out);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int nodes() const { return static_cast<int>(node_netns_.size()); }
  const std::string& node_netns(int k) const { return node_netns_.at(static_cast<size_t>(k)); }
  std::string node_address(int k) const;
  const std::string& store_netns() const { return store_netns_; }
  std::string store_address() const { return Address(1); }
  // The /24 the cluster's addresses are in, "169.254.X.0/24".
  std::string subnet() const;

  // Each NIC's own limit, both ways: iperf3 from the bridge's address to an iperf3 server at
  // the endpoint, `seconds` each way, `streams` streams. kBadInput when iperf3 is not
  // installed; kIOError when a measurement fails.
  Status MeasureLinks(int streams, int seconds);

  // env.json's `cluster`: the topology in words, the rates, the store's and each node's
  // namespace, device and address, each NIC's `tc qdisc show` at both ends and its iperf3
  // figures (bits per second, down: into the endpoint, up: out of it).
  nlohmann::ordered_json Env() const;

 private:
  Cluster() = default;
  std::string Address(int host) const;
  Status Build(int nodes);
  Status Join(const std::string& netns, const std::string& port, const std::string& address);
  Status Shape(const std::string& netns, const std::string& port, const std::string& address,
               uint64_t bits);
  Status MeasureOne(const std::string& netns, const std::string& address, int streams, int seconds,
                    nlohmann::ordered_json* out) const;
  void Remove();

  std::string id_, fabric_netns_, store_netns_, head_dev_;
  std::vector<std::string> node_netns_;
  std::vector<std::string> node_tmp_;  // each node's temporary folder (journaled)
  int subnet_ = 0;                     // X of 169.254.X.0/24
  std::string nic_, uplink_;
  uint64_t nic_bits_ = 0, uplink_bits_ = 0;
  nlohmann::ordered_json links_ = nlohmann::ordered_json::array();
};

}  // namespace loadbench
