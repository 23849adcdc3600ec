#include "loaders/base/block_limits.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

namespace loadbench {
namespace {

namespace fs = std::filesystem;

// The unsigned number a sysfs file holds (one line), nullopt when it cannot be read or is not one.
std::optional<uint64_t> ReadNumber(const fs::path& path) {
  std::ifstream in(path);
  std::string text;
  if (!in || !std::getline(in, text) || text.empty()) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || (*end != '\0' && *end != '\n' && *end != ' ')) return std::nullopt;
  return static_cast<uint64_t>(v);
}

}  // namespace

BlockLimits BlockLimitsOfDevice(dev_t dev, const std::string& sys) {
  BlockLimits l;
  std::error_code ec;
  fs::path disk = fs::canonical(fmt::format("{}/dev/block/{}:{}", sys, major(dev), minor(dev)), ec);
  if (ec) return l;  // no block device: overlay, tmpfs, fuse, NFS, btrfs subvolume ids, ...
  if (fs::exists(disk / "partition", ec)) disk = disk.parent_path();
  const fs::path q = disk / "queue";
  const auto sectors = ReadNumber(q / "max_sectors_kb");
  const auto segments = ReadNumber(q / "max_segments");
  const auto block = ReadNumber(q / "logical_block_size");
  if (!sectors || !segments || !block) return l;
  l.device = disk.filename().string();
  l.max_sectors_kb = *sectors, l.max_segments = *segments, l.logical_block_size = *block;
  l.max_hw_sectors_kb = ReadNumber(q / "max_hw_sectors_kb").value_or(0);
  l.max_segment_size = ReadNumber(q / "max_segment_size").value_or(0);
  return l;
}

BlockLimits BlockLimitsOfFile(int fd, const std::string& sys) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  return BlockLimitsOfDevice(st.st_dev, sys);
}

}  // namespace loadbench
