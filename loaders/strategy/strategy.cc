#include "loaders/strategy/strategy.h"

#include <fmt/format.h>

namespace loadbench {

double SpanSeconds(const std::vector<TimeSpan>& spans) {
  double s = 0;
  for (const TimeSpan& t : spans) s += std::chrono::duration<double>(t.end - t.begin).count();
  return s;
}

Status Loader::LoadGroups(const std::string& path, const TensorTable&,
                          const std::vector<TensorGroup>&, const GroupUse&) {
  return Status::Unsupported(fmt::format(
      "{}: this strategy loads every tensor at once (Load), not a group at a time", path));
}

Status Loader::LoadToDevice(const std::string& path, const TensorTable&, DeviceLoad*) {
  return Status::Unsupported(
      fmt::format("{}: this strategy loads into host memory (Load), not into a GPU", path));
}

std::string FlagNames(uint32_t flags) {
  static const std::pair<StrategyFlag, const char*> kNames[] = {
      {kEager, "eager"},
      {kMapsFile, "maps-file"},
      {kAllocates, "allocates"},
      {kDirectIO, "direct-io"},
      {kThreads, "threads"},
      {kSharedSegment, "shared-segment"},
      {kStreams, "streams"},
      {kDevice, "device"},
      {kModel, "model"},
      {kRemote, "remote"},
      {kBothPlaces, "local-or-remote"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

}  // namespace loadbench
