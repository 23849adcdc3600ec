// The one loop that watches a run's started readers, workers and commands alike: it waits on
// their descriptors, samples their timelines when a sample is due, and kills them all when
// the command is interrupted or the run's time is up.
#pragma once

#include <poll.h>

#include <chrono>
#include <string>
#include <vector>

namespace loadbench {

using WatchClock = std::chrono::steady_clock;

// What is watched: a launcher's readers while they run.
class Watched {
 public:
  virtual ~Watched() = default;
  // The descriptors to wait on this turn (a -1 is skipped); none left ends the watch.
  virtual void Fds(std::vector<pollfd>* fds) = 0;
  // fds[i] of this turn has something, or hung up.
  virtual void Ready(size_t i) = 0;
  // After a turn's descriptors were read (`polled`: when the wait ended): whether it is over.
  virtual bool Done(WatchClock::time_point polled) = 0;
  virtual void Sample() {}     // a timeline sample is due (one sampled elsewhere: nothing)
  virtual void KillAll() = 0;  // interrupted or out of time
  virtual int MaxWaitMs() const { return 100; }
};

enum class WatchEnd { kDone, kTimedOut, kInterrupted };

// Watches `w` until it is done, the command is interrupted, or `timeout_s` (0: none) has passed
// since `t0`; kills everything in the last two cases.
WatchEnd Watch(Watched& w, double sample_s, double timeout_s, WatchClock::time_point t0);

// LOADBENCH_DEADLINE=SECONDS (loaders/blocks/peers.h) for readers that the watch kills at
// `killed_at`, `timeout_s` after their start: a little before (a tenth of the timeout, 2 s at
// most), so that a reader waiting on another fails first, naming it. Workers and commands alike.
std::string DeadlineVariable(WatchClock::time_point killed_at, double timeout_s);

}  // namespace loadbench
