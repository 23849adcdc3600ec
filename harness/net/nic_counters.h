// A network namespace's own interface counters: what its NICs carried in and out, headers
// included, as the kernel counts it (/proc/net/dev, which shows the namespace of the process
// that reads it; /sys/class/net shows the one sysfs was mounted in). A cluster's rank reads its
// node's around its reader (launch/ranks.h), so that what the wire carried is measured, not
// inferred from the readers' own counts.
#pragma once

#include <cstdint>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

struct NicCounters {
  uint64_t rx_bytes = 0, tx_bytes = 0;
  int interfaces = 0;  // how many were summed
};

// The sum of the interfaces of a /proc/net/dev text but the loopback and ifb devices (which
// carry a real interface's traffic again when it is shaped on ingress). kFailed naming the
// line that is not an interface's, or when there is no interface to sum.
Status ParseNetDev(const std::string& text, NicCounters* out);

// This process's namespace's counters, from /proc/self/net/dev.
Status ReadNicCounters(NicCounters* out);

}  // namespace loadbench
