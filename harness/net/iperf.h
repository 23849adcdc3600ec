// A link's own limit, measured: iperf3 over the link, both its ends written here: its server in
// the link's namespace (started once for the command, a server like the others:
// harness/net/server.h), its client here, the server sending (--reverse: the way a model's bytes
// go), with as many TCP streams as the reads it is set beside.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "harness/net/link.h"
#include "harness/net/server.h"
#include "loaders/base/status.h"

namespace loadbench {

// One iperf3 client run.
struct Iperf3Run {
  std::string address = "";
  int port = 0;
  int streams = 1;
  int seconds = 1;
  bool reverse = false;    // the server sends
  std::string netns = "";  // where the client runs (a /run/netns path); "": here
};

// One measurement: {"bytes", "seconds", "gb_per_s" (payload received, GB = 1e9 bytes),
// "receiver_bits_per_s", "sender_bits_per_s", "retransmits"}. kIOError with iperf3's own error
// otherwise.
Status Iperf3(const Iperf3Run& run, nlohmann::ordered_json* out);

class LinkMeter {
 public:
  // iperf3's server on the link's server address. kBadInput when iperf3 is not installed.
  static Status Start(const Link& link, std::unique_ptr<LinkMeter>* out);

  // One measurement of `streams` streams for `seconds` (whole), the server sending (Iperf3).
  Status Measure(int streams, int seconds, nlohmann::ordered_json* out) const;

  int port() const { return server_->port(); }
  // {"program": "iperf3", "version", "endpoint"}.
  nlohmann::ordered_json Env() const;

 private:
  std::string address_;
  std::unique_ptr<Server> server_;
};

}  // namespace loadbench
