// One io_uring ring owned for the length of a scope, and why setting one up failed in words a
// user can act on. Shared by the io_uring strategy and the probe's device ceiling.
#pragma once

#include <liburing.h>

#include <string>

namespace loadbench {

class IoRing final {
 public:
  IoRing() = default;
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;
  // Tearing the ring down cancels what is still in flight; callers reap their requests before,
  // since O_DIRECT pins the pages it reads into.
  ~IoRing() {
    if (initialized_) ::io_uring_queue_exit(&ring_);
  }

  // 0, or -errno of io_uring_setup.
  int Init(unsigned entries) {
    const int ret = ::io_uring_queue_init(entries, &ring_, 0);
    initialized_ = ret == 0;
    return ret;
  }
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
  bool initialized_ = false;
};

// Why io_uring_setup failed with `err`, with the likely cause where the errno alone is cryptic
// (kernel.io_uring_disabled, a kernel built without it).
std::string RingSetupFailure(int err);

// Why io_uring cannot be used here (disabled, or a ring cannot be set up), "" when it can: the
// unsupported reason of the strategies that read through a ring.
std::string IoUringUnsupportedReason();

// kernel.io_uring_disabled as written in /proc ("0", "1", "2"), or "" where the kernel has no
// such switch (before Linux 6.6).
std::string IoUringDisabledSetting();

}  // namespace loadbench
