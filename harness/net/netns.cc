#include "harness/net/netns.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "harness/process/child.h"
#include "harness/process/program.h"

namespace loadbench {
namespace {

constexpr uint64_t kMinBurst = 256 * 1024;  // bytes: a TSO segment or four, at any rate
constexpr double kCommandLimitS = 10;

// Every process left in namespace `name` (a node's rank, a server), killed: a namespace whose
// name is gone lives on as long as one process holds it.
void KillInside(const std::string& name) {
  std::string pids;
  if (!RunIpRoute("ip", {"netns", "pids", name}, &pids).ok()) return;
  std::istringstream in(pids);
  for (long pid = 0; in >> pid;) {
    if (pid > 1 && pid != ::getpid()) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
}

}  // namespace

Status IpRouteTool(const std::string& tool, std::string* path) {
  if (FindProgram(tool, "iproute2", path).ok()) return Status::Ok();
  if (::access(("/usr/sbin/" + tool).c_str(), X_OK) == 0) {
    *path = "/usr/sbin/" + tool;
    return Status::Ok();
  }
  return Status::BadInput(
      fmt::format("a network of its own needs {}: install Debian's iproute2", tool));
}

Status CanMakeNetworks(const std::string& what) {
  std::string path;
  LB_RETURN_IF_ERROR(IpRouteTool("ip", &path));
  LB_RETURN_IF_ERROR(IpRouteTool("tc", &path));
  if (::geteuid() != 0) {
    return Status::BadInput(fmt::format("{} makes network namespaces and shapes them with tc: "
                                        "run as root (CAP_NET_ADMIN)",
                                        what));
  }
  return Status::Ok();
}

Status RunIpRoute(const std::string& tool, const std::vector<std::string>& args, std::string* out) {
  std::string path, text;
  LB_RETURN_IF_ERROR(IpRouteTool(tool, &path));
  std::vector<std::string> argv = {path};
  argv.insert(argv.end(), args.begin(), args.end());
  Status s = RunToEnd({.argv = argv, .timeout_s = kCommandLimitS}, &text);
  if (out != nullptr) *out = text;
  if (s.ok()) return s;
  return Status::IOError(fmt::format("{} {}: {}", tool, fmt::join(args, " "), LastLines(text, 2)));
}

std::vector<std::string> TbfArgs(uint64_t bits_per_s) {
  const uint64_t burst = std::max(kMinBurst, bits_per_s / 8 / 1000);
  return {"tbf",     "rate", fmt::format("{}bit", bits_per_s), "burst", fmt::format("{}b", burst),
          "latency", "20ms"};
}

bool RemoveNet(Leftover kind, const std::string& name) {
  const bool netns = kind == Leftover::kNetns;
  const std::string where = (netns ? "/run/netns/" : "/sys/class/net/") + name;
  if (::access(where.c_str(), F_OK) == 0) {
    if (netns) KillInside(name);
    (void)RunIpRoute("ip", {netns ? "netns" : "link", "del", name});
  }
  const bool gone = ::access(where.c_str(), F_OK) != 0;
  if (gone) UntrackLeftover(kind, name);
  return gone;
}

}  // namespace loadbench
