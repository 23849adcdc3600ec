#include "harness/net/nic_counters.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace loadbench {
namespace {

// The fields of one interface's line after "NAME:": 8 receive counters, then 8 transmit.
constexpr int kNetDevFields = 16;
constexpr int kTxBytesField = 8;

bool SkippedInterface(const std::string& name) { return name == "lo" || name.rfind("ifb", 0) == 0; }

}  // namespace

Status ParseNetDev(const std::string& text, NicCounters* out) {
  NicCounters sum;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (line.find('|') != std::string::npos) continue;  // the two heading lines
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const size_t first = line.find_first_not_of(' ');
    if (colon == std::string::npos || first >= colon) {
      return Status::Failed(fmt::format("/proc/net/dev: line '{}' is not an interface's", line));
    }
    const std::string name = line.substr(first, colon - first);
    std::istringstream fields(line.substr(colon + 1));
    uint64_t v[kNetDevFields];
    int n = 0;
    while (n < kNetDevFields && fields >> v[n]) ++n;
    if (n != kNetDevFields) {
      return Status::Failed(fmt::format("/proc/net/dev: interface {} has {} counters, not {}", name,
                                        n, kNetDevFields));
    }
    if (SkippedInterface(name)) continue;
    sum.rx_bytes += v[0];
    sum.tx_bytes += v[kTxBytesField];
    ++sum.interfaces;
  }
  if (sum.interfaces == 0) {
    return Status::Failed("/proc/net/dev: no interface but the loopback in this namespace");
  }
  *out = sum;
  return Status::Ok();
}

Status ReadNicCounters(NicCounters* out) {
  std::ifstream in("/proc/self/net/dev");
  if (!in) return Status::Failed("/proc/self/net/dev cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseNetDev(text.str(), out);
}

}  // namespace loadbench
