// A network link between the readers and the experiment's server: the server's side is a
// network namespace of its own, joined to this one by a veth pair with link-local addresses
// (169.254.0.0/16, one /30 per link), and shaped with tc's token bucket filter (TBF) in both
// directions on the client's end: its egress (requests) directly, its ingress (responses)
// redirected through an IFB device. Nothing on the server's side is shaped, so the server
// runs as it would on a host of its own. Delay is added with netem on the server's end where
// the kernel has it; where it has not, the link says why, and its measured round-trip time is
// recorded either way.
//
// Everything is made through iproute2 (ip, tc), journaled as a leftover before it is made
// (harness/leftovers/leftovers.h), and removed when the Link goes: the namespace (its veth end,
// and with it the pair), the IFB device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench {

// A rate as tc takes it, checked: NUMBER with a unit of bits (bit, kbit, mbit, gbit, tbit) or
// bytes (bps, kbps, mbps, gbps), decimal prefixes, from 1mbit to 1tbit; or "unshaped" (0).
// kBadInput naming the text and the reason otherwise.
Status ParseLinkRate(const std::string& text, uint64_t* bits_per_s);
// A delay as netem takes it: NUMBER with us, ms or s, up to 10 s; in microseconds.
Status ParseLinkDelay(const std::string& text, uint64_t* us);

class Link {
 public:
  // Makes the namespace, the pair, the IFB device and the addresses; `rates` are tried once
  // each, so that one the kernel cannot shape stops the command before any run (kBadInput:
  // not root, no ip or tc, a rate tc refuses). `delay` ("" for none) is applied when the kernel
  // has netem.
  static Status Make(const std::vector<std::string>& rates, const std::string& delay,
                     std::unique_ptr<Link>* out);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // The link shaped at `rate` (ParseLinkRate's text) both ways; "unshaped" removes the
  // shaping. Does nothing when it is so already.
  Status Shape(const std::string& rate);
  const std::string& rate() const { return rate_; }

  const std::string& netns() const { return netns_; }  // the server side's namespace
  std::string netns_path() const { return "/run/netns/" + netns_; }
  const std::string& server_address() const { return server_addr_; }
  // Whether the delay asked for was applied, and why not when it was not.
  bool delay_applied() const { return delay_applied_; }
  const std::string& delay_why() const { return delay_why_; }
  const std::string& client_address() const { return client_addr_; }
  // Bytes the client's end has received so far (frames, headers included).
  uint64_t ClientRxBytes() const;
  // The round-trip time of a TCP connection to the server's `port`, median of `n` handshakes,
  // into the link's record; kIOError when nothing answers there.
  Status MeasureRtt(int port, int n);

  // env.json's `link`: the namespace, both ends (device, address, MTU), the rates and each
  // one's tc settings as `tc qdisc show` printed them, the delay asked and whether it was
  // applied, and the measured RTT.
  nlohmann::ordered_json Env() const;

 private:
  Link() = default;
  Status Build();
  Status Apply(uint64_t bits_per_s);
  Status Unshape();
  void Remove();

  std::string netns_, client_dev_, server_dev_, ifb_dev_, client_addr_, server_addr_;
  std::string rate_ = "unshaped";
  uint64_t delay_us_ = 0;
  std::string delay_text_, delay_why_;
  bool delay_applied_ = false;
  nlohmann::ordered_json tc_ = nlohmann::ordered_json::object();  // rate -> tc qdisc show
  std::vector<double> rtt_ms_;
};

}  // namespace loadbench
