// What the link (link.h) and the cluster (cluster.h) share: iproute2's programs run to their
// end, TBF's settings at a rate, and the one removal of their network namespaces and devices,
// by what made them when it goes and by the next measuring command after one killed before it
// could (leftovers/leftovers.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/process/journal.h"
#include "loaders/base/status.h"

namespace loadbench {

// How every shaped link here is shaped, in words for env.json.
inline constexpr const char* kTbfSettings = "burst max(256 KiB, 1 ms at the rate), latency 20ms";

// `tool` (ip or tc), found on PATH or in /usr/sbin (where Debian's iproute2 puts them and a
// user's PATH may not look). kBadInput naming the package when missing.
Status IpRouteTool(const std::string& tool, std::string* path);

// Whether this process can make network namespaces and shape them: ip and tc installed, run as
// root. kBadInput naming `what` ("a [link]", "a [cluster]") and what is missing otherwise.
Status CanMakeNetworks(const std::string& what);

// Runs ip or tc with `args`, at most 10 s; its output in *out when given. kIOError with the
// command and what it said.
Status RunIpRoute(const std::string& tool, const std::vector<std::string>& args,
                  std::string* out = nullptr);

// tc's arguments for a token bucket filter at `bits_per_s`: "tbf rate R burst B latency L".
std::vector<std::string> TbfArgs(uint64_t bits_per_s);

// Deletes network namespace `name` (kind kNetns: every process still in it killed first, then
// `ip netns del`) or network device `name`
// of this namespace (kNetDev: `ip link del`), and strikes it off this process's journal once it is
// gone. True when it is gone, also when it was gone already.
bool RemoveNet(Leftover kind, const std::string& name);

}  // namespace loadbench
