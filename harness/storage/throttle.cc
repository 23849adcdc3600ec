// A device class applied: this process moved into a cgroup of its own whose read limits name
// the storage's loop device (v1 blkio.throttle.read_bps_device and read_iops_device, or v2
// io.max), so that every read of the device by this process and what it starts after is held
// to the class's bytes and operations per second; and moved back, the group removed.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/process/journal.h"
#include "harness/storage/devices.h"
#include "harness/storage/parts.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One write(2): cgroupfs takes a value per write.
Status WriteValue(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::IOErrorFromErrno(path, errno);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return Status::IOErrorFromErrno(fmt::format("writing '{}' to {}", text, path), errno);
  }
  return Status::Ok();
}

bool HasToken(const std::string& list, const std::string& token) {
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    std::istringstream words(item);
    for (std::string w; words >> w;) {
      if (w == token) return true;
    }
  }
  return false;
}

// This process's group in the hierarchy whose /proc/self/cgroup line lists `controller` (v1),
// or the v2 line ("0::") when `controller` is empty; relative to a mount whose root is
// `mount_root`.
std::string OwnGroup(const std::string& controller, const std::string& mount_root) {
  std::istringstream lines(ReadAll("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (controller.empty() ? line.substr(0, a) != "0" || !controllers.empty()
                           : !HasToken(controllers, controller)) {
      continue;
    }
    std::string path = line.substr(b + 1);
    if (mount_root != "/" && path.starts_with(mount_root)) path = path.substr(mount_root.size());
    return path == "/" ? "" : path;
  }
  return "";
}

// "MAJ:MIN" of block device `name` ("loop3").
Status DeviceNumber(const std::string& name, std::string* out) {
  struct stat st {};
  const std::string dev = "/dev/" + name;
  if (::stat(dev.c_str(), &st) != 0) return Status::IOErrorFromErrno(dev, errno);
  *out = fmt::format("{}:{}", major(st.st_rdev), minor(st.st_rdev));
  return Status::Ok();
}

// The limits of `d` on device `devnum` written into the group at `path`.
Status WriteLimits(const std::string& path, bool v2, const std::string& devnum,
                   const DeviceClass& d) {
  if (v2) {
    std::string max = devnum;
    if (d.read_bps > 0) max += fmt::format(" rbps={}", d.read_bps);
    if (d.read_iops > 0) max += fmt::format(" riops={}", d.read_iops);
    return WriteValue(path + "/io.max", max);
  }
  if (d.read_bps > 0) {
    LB_RETURN_IF_ERROR(WriteValue(path + "/blkio.throttle.read_bps_device",
                                  fmt::format("{} {}", devnum, d.read_bps)));
  }
  if (d.read_iops > 0) {
    LB_RETURN_IF_ERROR(WriteValue(path + "/blkio.throttle.read_iops_device",
                                  fmt::format("{} {}", devnum, d.read_iops)));
  }
  return Status::Ok();
}

}  // namespace

Status IoCgroupParent(std::string* parent, bool* v2) {
  std::istringstream lines(ReadAll("/proc/self/mountinfo"));
  std::string v2_why = "no cgroup2 mount with the io controller", v1_root;
  for (std::string line; std::getline(lines, line);) {
    // id parent maj:min root mount_point options [optional...] - type source super_options
    std::istringstream in(line);
    std::vector<std::string> f{std::istream_iterator<std::string>(in), {}};
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || f.end() - dash < 4) continue;
    if (dash[1] == "cgroup2" && HasToken(ReadAll(f[4] + "/cgroup.controllers"), "io")) {
      if (::access(f[4].c_str(), W_OK) == 0) {
        *parent = f[4];
        *v2 = true;
        return Status::Ok();
      }
      v2_why = Status::FromErrno(f[4], errno).message();
    } else if (dash[1] == "cgroup" && v1_root.empty() && HasToken(dash[3], "blkio")) {
      v1_root = f[4] + OwnGroup("blkio", f[3]);
    }
  }
  if (!v1_root.empty() && ::access(v1_root.c_str(), W_OK) == 0) {
    *parent = v1_root;
    *v2 = false;
    return Status::Ok();
  }
  const std::string v1_why =
      v1_root.empty() ? "no blkio hierarchy mounted" : Status::FromErrno(v1_root, errno).message();
  return Status::Unsupported(fmt::format(
      "a device class needs the blkio (or io) cgroup controller: v2: {}; v1: {}", v2_why, v1_why));
}

bool IsIoCgroupOfProcess(const std::string& path, long pid) {
  std::string parent;
  bool v2 = false;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || !IoCgroupParent(&parent, &v2).ok() ||
      path.substr(0, slash) != parent) {
    return false;
  }
  const std::string prefix = fmt::format("loadbench-{}-", pid), name = path.substr(slash + 1);
  return name.starts_with(prefix) && name.size() > prefix.size() &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

Status RemoveIoCgroup(const std::string& path) {
  for (int retry = 0;; ++retry) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return Status::Ok();
    if (errno != EBUSY || retry == 100) {
      return Status::IOErrorFromErrno(fmt::format("removing cgroup {}", path), errno);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status Storage::Enter() {
  if (!spec_.device.on() || device_.empty() || !parts_->cgroup.empty()) return Status::Ok();
  std::string parent, devnum;
  bool v2 = false;
  LB_RETURN_IF_ERROR(IoCgroupParent(&parent, &v2));
  LB_RETURN_IF_ERROR(DeviceNumber(device_, &devnum));
  if (v2) LB_RETURN_IF_ERROR(WriteValue(parent + "/cgroup.subtree_control", "+io"));
  const std::string from = v2 ? parent + OwnGroup("", "/") : parent;
  static std::atomic<unsigned> counter{0};
  std::string path;
  for (;;) {  // a group a crashed process of this pid left is skipped, not reused
    path = fmt::format("{}/loadbench-{}-{}", parent, ::getpid(), counter++);
    TrackLeftover(Leftover::kIoCgroup, path);
    if (::mkdir(path.c_str(), 0755) == 0) break;
    const int err = errno;
    UntrackLeftover(Leftover::kIoCgroup, path);
    if (err != EEXIST) return Status::IOErrorFromErrno(path, err);
  }
  Status st = WriteLimits(path, v2, devnum, spec_.device);
  if (st.ok()) st = WriteValue(path + "/cgroup.procs", "0");
  if (!st.ok()) {
    if (RemoveIoCgroup(path).ok()) UntrackLeftover(Leftover::kIoCgroup, path);
    return st;
  }
  parts_->cgroup = path;
  parts_->cgroup_from = from;
  parts_->cgroup_v2 = v2;
  return Status::Ok();
}

Status Storage::Leave() {
  if (parts_ == nullptr || parts_->cgroup.empty()) return Status::Ok();
  LB_RETURN_IF_ERROR(WriteValue(parts_->cgroup_from + "/cgroup.procs", "0"));
  LB_RETURN_IF_ERROR(RemoveIoCgroup(parts_->cgroup));
  UntrackLeftover(Leftover::kIoCgroup, parts_->cgroup);
  parts_->cgroup.clear();
  return Status::Ok();
}

}  // namespace loadbench
