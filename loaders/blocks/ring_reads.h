// The read loop of the strategies that read through an io_uring ring (io_uring, direct_ring):
// requests queued as slots free up, submitted in batches, their completions reaped and handed
// back. A strategy derives from RingReads, says what to queue and what a completion means, and
// calls Run.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

class RingReads {
 public:
  virtual ~RingReads() = default;

 protected:
  // Keeps requests in flight until QueueMore queues nothing and every request has completed.
  // After an error nothing more is queued, but every request in flight is still reaped, since
  // the kernel may write into the destination until it completes. Errors name `path`.
  Status Run(io_uring* ring, const std::string& path);

  // Queues what may be queued now, calling Prepared() for each request prepared on the ring.
  virtual void QueueMore(io_uring* ring) = 0;
  // The request with user_data `slot` completed with result `res` (bytes, or -errno): done,
  // queued again (Prepared() once more), or an error.
  virtual Status Complete(io_uring* ring, size_t slot, int res) = 0;
  // After each batch of completions, while no error has occurred.
  virtual void Reaped() {}

  void Prepared() { ++queued_; }
  // Requests handed to the kernel so far.
  uint64_t submitted() const { return submitted_; }

 private:
  // Submits what is queued and waits for one completion.
  Status Submit(io_uring* ring, const std::string& path);

  unsigned queued_ = 0;     // prepared, not yet submitted
  unsigned in_kernel_ = 0;  // submitted, not yet reaped
  uint64_t submitted_ = 0;
};

}  // namespace loadbench
