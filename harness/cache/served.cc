#include "harness/cache/served.h"

#include <map>
#include <mutex>
#include <sstream>

#include "loaders/remote/url.h"

namespace loadbench {
namespace {

struct Served {
  std::string folder, suffix;
};

std::mutex& Lock() {
  static std::mutex m;
  return m;
}

std::map<std::string, Served>& Table() {
  static std::map<std::string, Served> t;
  return t;
}

// Whether a name's path has a `..` component, which would leave the served folder (a name like
// `m..v2.wlf` has none: only a whole component counts).
bool LeavesFolder(const std::string& rest) {
  std::istringstream parts(rest);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part == "..") return true;
  }
  return false;
}

}  // namespace

void RegisterServed(const std::string& prefix, const std::string& folder,
                    const std::string& suffix) {
  std::lock_guard<std::mutex> g(Lock());
  Table()[prefix] = Served{folder, suffix};
}

void UnregisterServed(const std::string& prefix) {
  std::lock_guard<std::mutex> g(Lock());
  Table().erase(prefix);
}

std::string LocalFileOf(const std::string& shard_path) {
  std::lock_guard<std::mutex> g(Lock());
  for (const auto& [prefix, s] : Table()) {
    if (!shard_path.starts_with(prefix)) continue;
    const std::string rest = shard_path.substr(prefix.size());
    if (LeavesFolder(rest)) return "";
    return s.folder + "/" + rest + s.suffix;
  }
  return IsRemote(shard_path) ? "" : shard_path;
}

}  // namespace loadbench
