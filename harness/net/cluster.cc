#include "harness/net/cluster.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "harness/net/iperf.h"
#include "harness/net/link.h"
#include "harness/net/netns.h"
#include "harness/net/server.h"
#include "harness/process/journal.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kStore = 1, kFirstNode = 10, kBridge = 254, kHead = 253;

// X of a 169.254.X.0/24 that no address or route of this namespace is in (the first and the last
// /24 are reserved by RFC 3927).
Status PickSubnet(int* x) {
  std::string used, routes;
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-4", "-o", "addr", "show"}, &used));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-4", "route", "show"}, &routes));
  used += routes;
  const int start = static_cast<int>(::getpid() % 200);
  for (int k = 0; k < 253; ++k) {
    const int c = 1 + (start + k) % 253;
    if (used.find(fmt::format("169.254.{}.", c)) == std::string::npos) {
      *x = c;
      return Status::Ok();
    }
  }
  return Status::IOError("no free /24 left in 169.254.0.0/16");
}

// A NIC of `bits` per second: HTB at that rate, its small packets (under 512 bytes: TCP's
// acknowledgements, HTTP requests) in a class of their own served first, as a NIC's short
// hardware queue and a host's fair queueing would let them through (this kernel may have no
// fq_codel); the bulk in the other. Each step is tc's arguments, DEV for the device.
std::vector<std::vector<std::string>> HtbSteps(uint64_t bits) {
  const std::string rate = fmt::format("{}bit", bits);
  const std::string burst = fmt::format("{}b", std::max<uint64_t>(256 * 1024, bits / 8 / 1000));
  // The classes' assured rates add up to the NIC's, so that together they never pass it (HTB
  // gives each class its own rate before any borrowing).
  const uint64_t small_bits = bits / 10;
  const std::string small = fmt::format("{}bit", small_bits);
  const std::string bulk = fmt::format("{}bit", bits - small_bits);
  return {
      {"qdisc", "replace", "dev", "DEV", "root", "handle", "1:", "htb", "default", "20"},
      {"class", "add", "dev", "DEV", "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil",
       rate, "burst", burst, "cburst", burst, "quantum", "65536"},
      {"class", "add", "dev",   "DEV", "parent", "1:1", "classid", "1:10",  "htb",  "rate", small,
       "ceil",  rate,  "burst", burst, "cburst", burst, "quantum", "65536", "prio", "0"},
      {"class", "add", "dev",   "DEV", "parent", "1:1", "classid", "1:20",  "htb",  "rate", bulk,
       "ceil",  rate,  "burst", burst, "cburst", burst, "quantum", "65536", "prio", "1"},
      {"filter", "add", "dev", "DEV", "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match",
       "u16", "0x0000", "0xfe00", "at", "2", "flowid", "1:10"}};
}

}  // namespace

Status Cluster::Make(int nodes, const std::string& nic, const std::string& uplink,
                     std::unique_ptr<Cluster>* out) {
  std::unique_ptr<Cluster> c(new Cluster);
  LB_RETURN_IF_ERROR(ParseLinkRate(nic, &c->nic_bits_));
  LB_RETURN_IF_ERROR(ParseLinkRate(uplink, &c->uplink_bits_));
  if (c->nic_bits_ == 0 || c->uplink_bits_ == 0) {
    return Status::BadInput("[cluster]: nic and uplink are rates (\"200mbit\"), not unshaped");
  }
  if (nodes < 1 || nodes > kMaxClusterNodes) {
    return Status::BadInput(fmt::format("[cluster]: {} nodes; 1 to {}", nodes, kMaxClusterNodes));
  }
  c->nic_ = nic, c->uplink_ = uplink;
  LB_RETURN_IF_ERROR(CanMakeNetworks("a [cluster]"));
  if (Status s = c->Build(nodes); !s.ok()) {
    return Status::BadInput("making the cluster: " + s.message());
  }
  *out = std::move(c);
  return Status::Ok();
}

std::string Cluster::Address(int host) const { return fmt::format("169.254.{}.{}", subnet_, host); }
std::string Cluster::node_address(int k) const { return Address(kFirstNode + k); }
std::string Cluster::subnet() const { return fmt::format("169.254.{}.0/24", subnet_); }

// The fabric with its bridge, the head's port into it, then the store and each node joined
// and shaped; every namespace and the head's device journaled before it is made.
Status Cluster::Build(int nodes) {
  static std::atomic<unsigned> made{0};
  id_ = fmt::format("{}c{}", ::getpid(), made++);
  LB_RETURN_IF_ERROR(PickSubnet(&subnet_));
  fabric_netns_ = "loadbench-" + id_ + "-fabric";
  TrackLeftover(Leftover::kNetns, fabric_netns_);
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"netns", "add", fabric_netns_}));
  const std::vector<std::string> in_fabric = {"-n", fabric_netns_};
  auto fabric = [&](std::vector<std::string> args) {
    args.insert(args.begin(), in_fabric.begin(), in_fabric.end());
    return RunIpRoute("ip", args);
  };
  LB_RETURN_IF_ERROR(fabric({"link", "add", "br0", "type", "bridge"}));
  LB_RETURN_IF_ERROR(fabric({"addr", "add", Address(kBridge) + "/24", "dev", "br0"}));
  LB_RETURN_IF_ERROR(fabric({"link", "set", "br0", "up"}));
  head_dev_ = "lbh" + id_;
  TrackLeftover(Leftover::kNetDev, head_dev_);
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"link", "add", head_dev_, "type", "veth", "peer", "name",
                                       "head", "netns", fabric_netns_}));
  LB_RETURN_IF_ERROR(fabric({"link", "set", "head", "master", "br0", "up"}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"addr", "add", Address(kHead) + "/24", "dev", head_dev_}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"link", "set", head_dev_, "up"}));
  store_netns_ = "loadbench-" + id_ + "-store";
  LB_RETURN_IF_ERROR(Join(store_netns_, "store", store_address()));
  LB_RETURN_IF_ERROR(Shape(store_netns_, "store", store_address(), uplink_bits_));
  for (int k = 0; k < nodes; ++k) {
    node_netns_.push_back(fmt::format("loadbench-{}-n{}", id_, k));
    const std::string port = fmt::format("n{}", k);
    LB_RETURN_IF_ERROR(Join(node_netns_.back(), port, node_address(k)));
    LB_RETURN_IF_ERROR(Shape(node_netns_.back(), port, node_address(k), nic_bits_));
    // The node's temporary folder, as a host has one (process/child.h ExecShellInNetns).
    node_tmp_.emplace_back();
    LB_RETURN_IF_ERROR(MakeJournaledFolder(node_netns_.back(), &node_tmp_.back()));
  }
  return Status::Ok();
}

// Namespace `netns` made, its NIC ("nic") a veth whose other end is `port` on the bridge.
Status Cluster::Join(const std::string& netns, const std::string& port,
                     const std::string& address) {
  TrackLeftover(Leftover::kNetns, netns);
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"netns", "add", netns}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-n", fabric_netns_, "link", "add", port, "type", "veth",
                                       "peer", "name", "nic", "netns", netns}));
  LB_RETURN_IF_ERROR(
      RunIpRoute("ip", {"-n", fabric_netns_, "link", "set", port, "master", "br0", "up"}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-n", netns, "addr", "add", address + "/24", "dev", "nic"}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-n", netns, "link", "set", "nic", "up"}));
  return RunIpRoute("ip", {"-n", netns, "link", "set", "lo", "up"});
}

// TBF at `bits` on the endpoint's NIC (what it sends) and on its bridge port (what it gets).
Status Cluster::Shape(const std::string& netns, const std::string& port, const std::string& address,
                      uint64_t bits) {
  Json tc = Json::object();
  for (const auto& [ns, dev, key] :
       {std::tuple{netns, std::string("nic"), "up"}, std::tuple{fabric_netns_, port, "down"}}) {
    Status s = Status::Ok();
    for (const std::vector<std::string>& step : HtbSteps(bits)) {
      std::vector<std::string> args = {"-n", ns};
      for (const std::string& a : step) args.push_back(a == "DEV" ? dev : a);
      if (s.ok()) s = RunIpRoute("tc", args);
    }
    if (!s.ok()) {
      return Status::BadInput(
          fmt::format("[cluster]: the kernel does not shape {} bit/s: {}", bits, s.message()));
    }
    std::string shown, classes;
    LB_RETURN_IF_ERROR(RunIpRoute("tc", {"-n", ns, "qdisc", "show", "dev", dev}, &shown));
    LB_RETURN_IF_ERROR(RunIpRoute("tc", {"-n", ns, "class", "show", "dev", dev}, &classes));
    tc[key] = shown;
    tc[std::string(key) + "_classes"] = classes;
  }
  const bool store = netns == store_netns_;
  links_.push_back({{"name", store ? "store" : port},
                    {"rate", store ? uplink_ : nic_},
                    {"bits_per_s", bits},
                    {"netns", netns},
                    {"address", address},
                    {"tc", tc},
                    {"iperf3", nullptr}});
  return Status::Ok();
}

// iperf3's server at the endpoint, its client on the bridge: forward (into the endpoint) and
// reverse (out of it).
Status Cluster::MeasureOne(const std::string& netns, const std::string& address, int streams,
                           int seconds, Json* out) const {
  ServerSpec spec;
  spec.kind = "iperf3";
  spec.address = address;
  spec.netns = "/run/netns/" + netns;
  std::unique_ptr<Server> server;
  LB_RETURN_IF_ERROR(Server::Start(spec, &server));
  Json down, up;
  Iperf3Run run{.address = address,
                .port = server->port(),
                .streams = streams,
                .seconds = seconds,
                .netns = "/run/netns/" + fabric_netns_};
  LB_RETURN_IF_ERROR(Iperf3(run, &down));
  run.reverse = true;
  LB_RETURN_IF_ERROR(Iperf3(run, &up));
  *out = {{"down_bits_per_s", down["receiver_bits_per_s"]},
          {"up_bits_per_s", up["receiver_bits_per_s"]},
          {"streams", streams},
          {"seconds", seconds},
          {"down", down},
          {"up", up}};
  return Status::Ok();
}

Status Cluster::MeasureLinks(int streams, int seconds) {
  for (Json& link : links_) {
    Json figures;
    if (Status s = MeasureOne(link["netns"], link["address"], streams, seconds, &figures);
        !s.ok()) {
      return s.code() == Status::Code::kUnsupported ? Status::BadInput(s.message()) : s;
    }
    link["iperf3"] = figures;
  }
  return Status::Ok();
}

Json Cluster::Env() const {
  Json nodes = Json::array();
  for (int k = 0; k < this->nodes(); ++k) {
    nodes.push_back(
        {{"node", k}, {"netns", node_netns(k)}, {"address", node_address(k)}, {"dev", "nic"}});
  }
  return {{"nodes", this->nodes()},
          {"nic", nic_},
          {"uplink", uplink_},
          {"nic_bits_per_s", nic_bits_},
          {"uplink_bits_per_s", uplink_bits_},
          {"cores", ::sysconf(_SC_NPROCESSORS_ONLN)},
          {"topology",
           fmt::format("a bridge (br0, {}) in namespace {}; the store and each node a namespace "
                       "of its own with one NIC, a veth pair into the bridge, shaped both ways "
                       "with htb at its rate (burst max(256 KiB, 1 ms at the rate)), packets "
                       "under 512 bytes (acknowledgements, requests) in a class served first, so "
                       "that they do not wait behind the node's own data; this namespace joins the "
                       "bridge unshaped at {} ({})",
                       Address(kBridge), fabric_netns_, Address(kHead), head_dev_)},
          {"subnet", subnet()},
          {"store", {{"netns", store_netns_}, {"address", store_address()}, {"dev", "nic"}}},
          {"node_list", nodes},
          {"links", links_}};
}

void Cluster::Remove() {
  for (const std::string& ns : node_netns_) RemoveNet(Leftover::kNetns, ns);
  if (!store_netns_.empty()) RemoveNet(Leftover::kNetns, store_netns_);
  if (!head_dev_.empty()) RemoveNet(Leftover::kNetDev, head_dev_);
  if (!fabric_netns_.empty()) RemoveNet(Leftover::kNetns, fabric_netns_);
  for (const std::string& dir : node_tmp_) (void)RemoveJournaledFolder(dir);
}

Cluster::~Cluster() { Remove(); }

}  // namespace loadbench
