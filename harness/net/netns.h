// A link's network namespaces and devices (link.h) removed: the one removal, by the link that
// made them when it goes and by the next measuring command after one killed before it could
// (leftovers/leftovers.h).
#pragma once

#include <string>

#include "harness/process/journal.h"

namespace loadbench {

// Deletes network namespace `name` (kind kNetns: `ip netns del`) or network device `name` of
// this namespace (kNetDev: `ip link del`), and strikes it off this process's journal once it is
// gone. True when it is gone, also when it was gone already.
bool RemoveNet(Leftover kind, const std::string& name);

}  // namespace loadbench
