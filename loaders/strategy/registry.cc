#include "loaders/strategy/registry.h"

#include <algorithm>

#include <fmt/format.h>

#include "loaders/remote/url.h"

namespace loadbench {
namespace {

std::vector<StrategyInfo>& Registry() {
  static std::vector<StrategyInfo> registry;
  return registry;
}

}  // namespace

bool RegisterStrategy(StrategyInfo info) {
  Registry().push_back(std::move(info));
  return true;
}

std::vector<const StrategyInfo*> Strategies() {
  std::vector<const StrategyInfo*> out;
  for (const auto& s : Registry()) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

const StrategyInfo* FindStrategy(const std::string& name) {
  for (const auto& s : Registry()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string CudaNotBuiltReason() {
#ifdef LOADBENCH_CUDA_ABSENT
  return LOADBENCH_CUDA_ABSENT;
#else
  return "";
#endif
}

std::string NotBuiltReason(const std::string& name) {
  if (name.starts_with("cuda_") && !CudaNotBuiltReason().empty()) {
    return fmt::format("strategy '{}' is not built: the CUDA strategies need the CUDA toolkit "
                       "at build time ({})",
                       name, CudaNotBuiltReason());
  }
  return fmt::format("strategy '{}' does not exist in this build", name);
}

std::string FileKindMismatch(const StrategyInfo& info, const std::string& path) {
  const bool remote = IsRemote(path);
  if (info.flags & kBothPlaces) return "";
  if ((info.flags & kRemote) && !remote) {
    return fmt::format("{} reads s3:// and http(s):// objects; {} is a local file", info.name,
                       path);
  }
  if (!(info.flags & kRemote) && remote) {
    return fmt::format(
        "{} reads local files; {} is remote: use http_get, http_ranges or http_stream, or mount "
        "the bucket (s3fs) and give the path inside the mount",
        info.name, path);
  }
  return "";
}

}  // namespace loadbench
