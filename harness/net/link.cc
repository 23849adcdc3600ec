#include "harness/net/link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "harness/net/kinds.h"
#include "harness/net/netns.h"
#include "harness/process/child.h"
#include "harness/process/journal.h"
#include "harness/process/program.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMinRate = 1'000'000;          // 1 mbit
constexpr uint64_t kMaxRate = 1'000'000'000'000;  // 1 tbit

// A /30 of 169.254.0.0/16 no interface here uses (the first and last /24 are reserved):
// *client is its .1, *server its .2.
Status PickSubnet(std::string* client, std::string* server) {
  std::string used;
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-4", "-o", "addr", "show"}, &used));
  static std::atomic<unsigned> made{0};
  const unsigned start = static_cast<unsigned>(::getpid()) * 31 + made++ * 7;
  constexpr unsigned kFirst = 64, kCount = 16320 - 64;  // /30s of 169.254.1.0 - 169.254.254.255
  for (unsigned k = 0; k < kCount; ++k) {
    const unsigned base = (kFirst + (start + k) % kCount) * 4;
    *client = fmt::format("169.254.{}.{}", base >> 8, (base & 255) + 1);
    *server = fmt::format("169.254.{}.{}", base >> 8, (base & 255) + 2);
    const std::string net = fmt::format("169.254.{}.{}/", base >> 8, (base & 255));
    if (used.find(*client + "/") == used.npos && used.find(*server + "/") == used.npos &&
        used.find(net) == used.npos) {
      return Status::Ok();
    }
  }
  return Status::IOError("no free /30 left in 169.254.0.0/16");
}

}  // namespace

Status ParseLinkRate(const std::string& text, uint64_t* bits_per_s) {
  if (text == "unshaped") {
    *bits_per_s = 0;
    return Status::Ok();
  }
  static const std::regex form("([0-9]+(\\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps)");
  std::smatch m;
  if (!std::regex_match(text, m, form)) {
    return Status::BadInput(fmt::format(
        "link rate {}: not a rate (a number and bit, kbit, mbit, gbit, tbit, bps, kbps, mbps or "
        "gbps, as tc writes them: \"1gbit\"; or \"unshaped\")",
        text));
  }
  const std::string unit = m[3].str();
  const bool bytes = unit.ends_with("bps");
  const char prefix = unit[0];
  const double scale = prefix == 'k'   ? 1e3
                       : prefix == 'm' ? 1e6
                       : prefix == 'g' ? 1e9
                       : prefix == 't' ? 1e12
                                       : 1;
  const double bits = std::stod(m[1].str()) * scale * (bytes ? 8 : 1);
  if (bits < static_cast<double>(kMinRate) || bits > static_cast<double>(kMaxRate)) {
    return Status::BadInput(
        fmt::format("link rate {}: outside what a link is shaped to here (1mbit to 1tbit)", text));
  }
  *bits_per_s = static_cast<uint64_t>(std::llround(bits));
  return Status::Ok();
}

Status ParseLinkDelay(const std::string& text, uint64_t* us) {
  static const std::regex form("([0-9]+(\\.[0-9]+)?)(us|ms|s)");
  std::smatch m;
  if (!std::regex_match(text, m, form)) {
    return Status::BadInput(
        fmt::format("link delay {}: not a delay (a number and us, ms or s: \"2ms\")", text));
  }
  const double scale = m[3] == "us" ? 1 : m[3] == "ms" ? 1e3 : 1e6;
  const double v = std::stod(m[1].str()) * scale;
  if (v > 10e6) return Status::BadInput(fmt::format("link delay {}: over 10 s", text));
  *us = static_cast<uint64_t>(std::llround(v));
  return Status::Ok();
}

Status Link::Make(const std::vector<std::string>& rates, const std::string& delay,
                  std::unique_ptr<Link>* out) {
  std::vector<uint64_t> bits(rates.size());
  for (size_t i = 0; i < rates.size(); ++i) LB_RETURN_IF_ERROR(ParseLinkRate(rates[i], &bits[i]));
  std::unique_ptr<Link> l(new Link);
  if (!delay.empty()) LB_RETURN_IF_ERROR(ParseLinkDelay(delay, &l->delay_us_));
  l->delay_text_ = delay;
  LB_RETURN_IF_ERROR(CanMakeNetworks("a [link]"));
  if (Status s = l->Build(); !s.ok()) return Status::BadInput("making the link: " + s.message());
  for (size_t i = 0; i < rates.size(); ++i) {
    if (bits[i] == 0) continue;
    if (Status s = l->Apply(bits[i]); !s.ok()) {
      return Status::BadInput(
          fmt::format("link rate {}: the kernel does not shape it: {}", rates[i], s.message()));
    }
    std::string client, ifb;
    LB_RETURN_IF_ERROR(RunIpRoute("tc", {"qdisc", "show", "dev", l->client_dev_}, &client));
    LB_RETURN_IF_ERROR(RunIpRoute("tc", {"qdisc", "show", "dev", l->ifb_dev_}, &ifb));
    l->tc_[rates[i]] = {{"client_egress", client}, {"client_ingress_ifb", ifb}};
  }
  LB_RETURN_IF_ERROR(l->Unshape());
  *out = std::move(l);
  return Status::Ok();
}

// The namespace, the veth pair between it and here, the IFB device the client's ingress goes
// through, the addresses; each journaled before it is made.
Status Link::Build() {
  static std::atomic<unsigned> made{0};
  const unsigned n = made++;
  const std::string id = fmt::format("{}x{}", ::getpid(), n);
  netns_ = "loadbench-" + id;
  client_dev_ = "lbc" + id, server_dev_ = "lbs" + id, ifb_dev_ = "lbi" + id;
  LB_RETURN_IF_ERROR(PickSubnet(&client_addr_, &server_addr_));
  TrackLeftover(Leftover::kNetns, netns_);
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"netns", "add", netns_}));
  TrackLeftover(Leftover::kNetDev, client_dev_);
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"link", "add", client_dev_, "type", "veth", "peer", "name",
                                       server_dev_, "netns", netns_}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"addr", "add", client_addr_ + "/30", "dev", client_dev_}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"link", "set", client_dev_, "up"}));
  LB_RETURN_IF_ERROR(
      RunIpRoute("ip", {"-n", netns_, "addr", "add", server_addr_ + "/30", "dev", server_dev_}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-n", netns_, "link", "set", server_dev_, "up"}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"-n", netns_, "link", "set", "lo", "up"}));
  TrackLeftover(Leftover::kNetDev, ifb_dev_);
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"link", "add", ifb_dev_, "type", "ifb"}));
  LB_RETURN_IF_ERROR(RunIpRoute("ip", {"link", "set", ifb_dev_, "up"}));
  LB_RETURN_IF_ERROR(
      RunIpRoute("tc", {"qdisc", "add", "dev", client_dev_, "handle", "ffff:", "ingress"}));
  LB_RETURN_IF_ERROR(RunIpRoute("tc", {"filter", "add", "dev", client_dev_, "parent",
                                       "ffff:", "protocol", "all", "u32", "match", "u32", "0", "0",
                                       "action", "mirred", "egress", "redirect", "dev", ifb_dev_}));
  if (delay_us_ > 0) {
    const Status s = RunIpRoute("tc", {"-n", netns_, "qdisc", "add", "dev", server_dev_, "root",
                                       "netem", "delay", fmt::format("{}us", delay_us_)});
    delay_applied_ = s.ok();
    if (!s.ok()) delay_why_ = "netem is not available in this kernel: " + s.message();
  }
  return Status::Ok();
}

Status Link::Apply(uint64_t bits_per_s) {
  for (const std::string& dev : {client_dev_, ifb_dev_}) {
    std::vector<std::string> args = {"qdisc", "replace", "dev", dev, "root"};
    for (const std::string& a : TbfArgs(bits_per_s)) args.push_back(a);
    LB_RETURN_IF_ERROR(RunIpRoute("tc", args));
  }
  return Status::Ok();
}

Status Link::Unshape() {
  for (const std::string& dev : {client_dev_, ifb_dev_}) {
    std::string shown;
    LB_RETURN_IF_ERROR(RunIpRoute("tc", {"qdisc", "show", "dev", dev, "root"}, &shown));
    if (shown.find("tbf") != shown.npos) {
      LB_RETURN_IF_ERROR(RunIpRoute("tc", {"qdisc", "del", "dev", dev, "root"}));
    }
  }
  rate_ = "unshaped";
  return Status::Ok();
}

Status Link::Shape(const std::string& rate) {
  if (rate == rate_) return Status::Ok();
  uint64_t bits = 0;
  LB_RETURN_IF_ERROR(ParseLinkRate(rate, &bits));
  if (bits == 0) return Unshape();
  LB_RETURN_IF_ERROR(Apply(bits));
  rate_ = rate;
  return Status::Ok();
}

uint64_t Link::ClientRxBytes() const {
  std::ifstream in("/sys/class/net/" + client_dev_ + "/statistics/rx_bytes");
  uint64_t v = 0;
  in >> v;
  return v;
}

Status Link::MeasureRtt(int port, int n) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, server_addr_.c_str(), &a.sin_addr);
  for (int i = 0; i < n; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const auto t0 = std::chrono::steady_clock::now();
    if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      return Status::FromErrno(fmt::format("{}:{}", server_addr_, port), errno);
    }
    rtt_ms_.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return Status::Ok();
}

Json Link::Env() const {
  const auto mtu = [](const std::string& dev, const std::string& ns) -> Json {
    std::string out;
    std::vector<std::string> args = {"-o", "link", "show", "dev", dev};
    if (!ns.empty()) args.insert(args.begin(), {"-n", ns});
    std::smatch m;
    static const std::regex re(" mtu ([0-9]+)");
    if (!RunIpRoute("ip", args, &out).ok() || !std::regex_search(out, m, re)) return nullptr;
    return std::stoi(m[1].str());
  };
  Json rtt = nullptr;
  if (!rtt_ms_.empty()) {
    std::vector<double> v = rtt_ms_;
    std::sort(v.begin(), v.end());
    rtt = {{"median", v[v.size() / 2]},
           {"min", v.front()},
           {"max", v.back()},
           {"handshakes", v.size()},
           {"how", "TCP connect() to the server, client side"}};
  }
  return {{"netns", netns_},
          {"client",
           {{"dev", client_dev_}, {"address", client_addr_}, {"mtu", mtu(client_dev_, "")}}},
          {"server",
           {{"dev", server_dev_}, {"address", server_addr_}, {"mtu", mtu(server_dev_, netns_)}}},
          {"shaping", fmt::format("tbf on the client's egress and on its ingress through ifb {}, "
                                  "{}",
                                  ifb_dev_, kTbfSettings)},
          {"tc", tc_},
          {"delay",
           {{"asked", delay_text_.empty() ? Json(nullptr) : Json(delay_text_)},
            {"applied", delay_applied_},
            {"why", delay_why_.empty() ? Json(nullptr) : Json(delay_why_)}}},
          {"rtt_ms", rtt}};
}

void Link::Remove() {
  // Each struck off the journal once it is gone, whether removed now or never made.
  if (!ifb_dev_.empty()) RemoveNet(Leftover::kNetDev, ifb_dev_);
  if (!client_dev_.empty()) RemoveNet(Leftover::kNetDev, client_dev_);
  if (!netns_.empty()) RemoveNet(Leftover::kNetns, netns_);
}

Link::~Link() { Remove(); }

}  // namespace loadbench
