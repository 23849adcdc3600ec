// Loop devices: a free one found, a file bound to it with direct I/O (losetup), the binding
// ended (LOOP_CLR_FD), and what sysfs says of it: its backing file, its settings, its counters.
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "harness/storage/devices.h"
#include "harness/storage/parts.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

std::string SysfsText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

bool IsLoopDeviceName(const std::string& device) {
  const std::string prefix = "/dev/loop";
  return device.size() > prefix.size() && device.starts_with(prefix) &&
         device.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

Status FreeLoopDevice(std::string* device) {
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control.valid()) {
    return Status::OfErrno(Status::Code::kUnsupported, "/dev/loop-control", errno);
  }
  const int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
  if (n < 0) return Status::IOErrorFromErrno("a free loop device (LOOP_CTL_GET_FREE)", errno);
  *device = fmt::format("/dev/loop{}", n);
  return Status::Ok();
}

Status AttachLoop(const std::string& device, const std::string& file, bool read_only) {
  std::vector<std::string> argv = {"losetup", "--direct-io=on"};
  if (read_only) argv.push_back("--read-only");
  argv.insert(argv.end(), {device, file});
  return RunTool(argv, "mount");
}

Status DetachLoop(const std::string& device) {
  UniqueFd fd(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return errno == ENOENT || errno == ENXIO ? Status::Ok()
                                             : Status::IOErrorFromErrno(device, errno);
  }
  // Kernels before 5.x answer EBUSY while the device is still open elsewhere for a moment (a
  // file system just unmounted); later ones detach it at its last close.
  for (int retry = 0;; ++retry) {
    if (::ioctl(fd.get(), LOOP_CLR_FD, 0) == 0 || errno == ENXIO) return Status::Ok();
    if (errno != EBUSY || retry == 50) {
      return Status::IOErrorFromErrno(fmt::format("detaching {} (LOOP_CLR_FD)", device), errno);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string LoopBackingFile(const std::string& device) {
  if (!IsLoopDeviceName(device)) return "";
  return SysfsText(fmt::format("/sys/block/{}/loop/backing_file", device.substr(5)));
}

std::optional<uint64_t> BlockValue(const std::string& name, const std::string& file) {
  const std::string text = SysfsText(fmt::format("/sys/block/{}/{}", name, file));
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(text);
}

std::optional<DeviceStat> Storage::Stat() const {
  if (device_.empty()) return std::nullopt;
  // reads, merges, sectors, ms; writes, merges, sectors, ms; in flight, io ms, queue ms; ...
  std::istringstream in(SysfsText(fmt::format("/sys/block/{}/stat", device_)));
  uint64_t f[11] = {};
  for (uint64_t& v : f) {
    if (!(in >> v)) return std::nullopt;
  }
  DeviceStat s;
  s.reads = f[0];
  s.read_merges = f[1];
  s.read_sectors = f[2];
  s.read_ms = f[3];
  s.in_flight = f[8];
  s.io_ms = f[9];
  s.queue_ms = f[10];
  return s;
}

}  // namespace loadbench
