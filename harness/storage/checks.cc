// What a storage kind needs that this machine may lack, said before any run: root, its
// programs (with the Debian package of each), the kernel's file system, loop devices, the io
// controller for a device class, and room in /tmp (or memory, for a tmpfs).
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/storage/devices.h"
#include "harness/storage/parts.h"
#include "harness/storage/storage.h"
#include "loaders/base/proc_fields.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct Tool {
  const char* name;
  const char* package;
};

// The programs making `kind` runs.
std::vector<Tool> ToolsOf(const std::string& kind) {
  if (kind == "tmpfs") return {};
  if (kind == "fuse") return {{"rclone", "rclone"}};
  const Tool losetup{"losetup", "mount"};
  if (kind == "xfs") return {losetup, {"mkfs.xfs", "xfsprogs"}};
  if (kind == "btrfs") return {losetup, {"mkfs.btrfs", "btrfs-progs"}};
  if (kind == "squashfs") return {losetup, {"mksquashfs", "squashfs-tools"}};
  if (kind == "erofs") return {losetup, {"mkfs.erofs", "erofs-utils"}};
  return {losetup, {"mkfs.ext4", "e2fsprogs"}};  // ext4, and overlay's lower layer
}

// Whether the kernel has file system `fs`: registered, or a module it would load for it.
bool KernelHas(const std::string& fs) {
  std::ifstream filesystems("/proc/filesystems");
  for (std::string line; std::getline(filesystems, line);) {
    if (line.substr(line.rfind('\t') + 1) == fs) return true;
  }
  if (::access(("/sys/module/" + fs).c_str(), F_OK) == 0) return true;
  char release[256] = {};
  std::ifstream osrelease("/proc/sys/kernel/osrelease");
  osrelease.getline(release, sizeof release);
  std::ifstream deps(fmt::format("/lib/modules/{}/modules.dep", release));
  for (std::string line; std::getline(deps, line);) {
    const size_t colon = line.find(':');
    const std::string module = line.substr(0, colon);
    const size_t slash = module.rfind('/');
    if (module.compare(slash + 1, fs.size() + 3, fs + ".ko") == 0) return true;
  }
  return false;
}

// What `kind` takes in /tmp for a model of `model_bytes` (the backing file, the image, rclone's
// cache); 0 for none.
uint64_t TmpBytes(const StorageSpec& s, uint64_t model_bytes) {
  if (s.kind == "ext4" || s.kind == "xfs" || s.kind == "btrfs") {
    return BackingBytes(s.kind, model_bytes);
  }
  if (s.kind == "overlay") return BackingBytes("ext4", model_bytes);
  if (s.kind == "squashfs" || s.kind == "erofs") return model_bytes + model_bytes / 64 + 16 * kMiB;
  if (s.kind == "fuse" && OptionOf(s, "cache") == "full") return model_bytes + 64 * kMiB;
  return 0;
}

std::string SpaceProblem(const StorageSpec& s, uint64_t model_bytes) {
  if (s.kind == "tmpfs") {
    const std::optional<uint64_t> free = MeminfoBytes("MemAvailable");
    const uint64_t need = model_bytes + 64 * kMiB;
    if (free && *free < need) {
      return fmt::format("a tmpfs of the model needs {} of memory; {} is available",
                         FormatBytes(need), FormatBytes(*free));
    }
    return "";
  }
  const uint64_t need = TmpBytes(s, model_bytes);
  if (need == 0) return "";
  Status st = CheckTmpSpace(need, fmt::format("a {} storage of the model", s.kind));
  return st.ok() ? "" : st.message();
}

}  // namespace

std::string StorageUnavailable(const StorageSpec& s, uint64_t model_bytes) {
  if (s.here()) return "";
  if (::geteuid() != 0) return "making a storage needs root; the `here` kind works without";
  for (const Tool& t : ToolsOf(s.kind)) {
    std::string path;
    Status st = FindTool(t.name, t.package, &path);
    if (!st.ok()) return st.message();
  }
  if (s.kind == "fuse") {
    std::string path;
    if (!FindTool("fusermount3", "fuse3", &path).ok() &&
        !FindTool("fusermount", "fuse3", &path).ok()) {
      return "command not found: fusermount3 (rclone mounts with it); install Debian's fuse3";
    }
    if (::access("/dev/fuse", R_OK | W_OK) != 0) return "no /dev/fuse: FUSE is not available here";
  }
  const std::string fs = s.kind == "fuse" ? "fuse" : s.kind;
  if (!KernelHas(fs)) {
    return fmt::format("the kernel has no {} file system: not in /proc/filesystems, no module", fs);
  }
  if (s.kind == "overlay" && !KernelHas("ext4")) {
    return "the kernel has no ext4 file system, which the overlay's lower layer is";
  }
  if (s.loop_backed() && ::access("/dev/loop-control", R_OK | W_OK) != 0) {
    return "no /dev/loop-control: this machine (or container) has no loop devices";
  }
  if (s.device.on()) {
    std::string parent;
    bool v2 = false;
    Status st = IoCgroupParent(&parent, &v2);
    if (!st.ok()) return st.message();
  }
  return SpaceProblem(s, model_bytes);
}

}  // namespace loadbench
