#include "harness/launch/watch.h"

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "harness/machine/timeline.h"
#include "harness/process/interrupt.h"
#include "loaders/blocks/peers.h"

namespace loadbench {

WatchEnd Watch(Watched& w, double sample_s, double timeout_s, WatchClock::time_point t0) {
  SamplePacer pacer(sample_s);
  std::vector<pollfd> fds;
  for (;;) {
    if (pacer.Due()) w.Sample();
    fds.clear();
    w.Fds(&fds);
    if (fds.empty()) return WatchEnd::kDone;
    const int wait_ms = std::min(pacer.WaitMs(100), w.MaxWaitMs());
    const int pr = ::poll(fds.data(), fds.size(), wait_ms);
    const int err = errno;
    const auto now = WatchClock::now();
    if (Interrupted()) {
      w.KillAll();
      return WatchEnd::kInterrupted;
    }
    if (timeout_s > 0 && std::chrono::duration<double>(now - t0).count() > timeout_s) {
      w.KillAll();
      return WatchEnd::kTimedOut;
    }
    if (pr < 0 && err != EINTR) return WatchEnd::kDone;
    for (size_t i = 0; pr > 0 && i < fds.size(); ++i) {
      if (fds[i].fd >= 0 && fds[i].revents != 0) w.Ready(i);
    }
    if (w.Done(now)) return WatchEnd::kDone;
  }
}

std::string DeadlineVariable(WatchClock::time_point killed_at, double timeout_s) {
  const double margin = std::min(2.0, timeout_s / 10);
  const double at = std::chrono::duration<double>(killed_at.time_since_epoch()).count();
  return fmt::format("{}={:.3f}", kDeadlineVar, at - margin);
}

}  // namespace loadbench
