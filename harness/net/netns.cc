#include "harness/net/netns.h"

#include <unistd.h>

#include "harness/process/child.h"
#include "harness/process/program.h"

namespace loadbench {

bool RemoveNet(Leftover kind, const std::string& name) {
  const bool netns = kind == Leftover::kNetns;
  const std::string where = (netns ? "/run/netns/" : "/sys/class/net/") + name;
  if (::access(where.c_str(), F_OK) == 0) {
    std::string ip, said;
    if (!FindProgram("ip", "iproute2", &ip).ok()) ip = "/usr/sbin/ip";
    const std::vector<std::string> del = {ip, netns ? "netns" : "link", "del", name};
    (void)RunToEnd({.argv = del, .timeout_s = 30}, &said);
  }
  const bool gone = ::access(where.c_str(), F_OK) != 0;
  if (gone) UntrackLeftover(kind, name);
  return gone;
}

}  // namespace loadbench
