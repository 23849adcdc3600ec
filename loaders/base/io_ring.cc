#include "loaders/base/io_ring.h"

#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace loadbench {

std::string IoUringDisabledSetting() {
  std::ifstream in("/proc/sys/kernel/io_uring_disabled");
  std::string word;
  in >> word;
  return word;
}

std::string RingSetupFailure(int err) {
  std::string why = fmt::format("io_uring_setup failed: {}", std::strerror(err));
  if (err == ENOSYS) {
    why += " (the kernel is built without io_uring)";
  } else if (err == EPERM) {
    const std::string disabled = IoUringDisabledSetting();
    if (disabled == "1") {
      why += " (kernel.io_uring_disabled = 1: only members of kernel.io_uring_group may use it)";
    } else if (disabled == "2") {
      why += " (io_uring is disabled: kernel.io_uring_disabled = 2)";
    }
  }
  return why;
}

std::string IoUringUnsupportedReason() {
  if (IoUringDisabledSetting() == "2") {
    return "io_uring is disabled (kernel.io_uring_disabled = 2)";
  }
  IoRing ring;
  if (const int ret = ring.Init(2); ret < 0) return RingSetupFailure(-ret);
  return "";
}

}  // namespace loadbench
