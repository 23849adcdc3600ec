// The one io_uring read loop: requests queued as slots free up, submitted in batches, their
// completions reaped and handed back. It is driven in two ways:
//  - ReadRequests: a source hands out reads (fd, offset, length, destination) for free slots
//    and a callback sees each read once all its bytes have arrived; short reads are asked again
//    for the rest, -EAGAIN and -EINTR retried, and an O_DIRECT read that stops inside a block
//    has met the file's end. The probe's direct recipes and cuda_bounce read this way.
//  - RingReads: a strategy derives from it, says what to queue and what a completion means,
//    and calls Run (the io_uring and direct_ring strategies).
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

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
  // Hands Complete one completion per batch: what it queues is submitted before the next
  // completion is handled. For a Complete that may block.
  void ReapOneAtATime() { reap_one_ = true; }

 private:
  // Submits what is queued and waits for one completion.
  Status Submit(io_uring* ring, const std::string& path);

  unsigned queued_ = 0;     // prepared, not yet submitted
  unsigned in_kernel_ = 0;  // submitted, not yet reaped
  uint64_t submitted_ = 0;
  bool reap_one_ = false;
};

// One read of ReadRequests: bytes [offset, offset + len) of `fd` into `dst`, of which the
// first `need` must arrive. `need` is less than `len` only where the read reaches past the
// file's end, as an O_DIRECT read of a file's last block, rounded up to the alignment, does.
// `path` names the file in errors.
struct RingRead {
  int fd = -1;
  uint64_t offset = 0;
  std::byte* dst = nullptr;
  uint64_t len = 0;  // under 4 GiB: one request asks for it
  uint64_t need = 0;
  std::string_view path;
};

// How ReadRequests drives its ring.
struct RingRules {
  // The reads in flight at most, in slots numbered from 0; the ring has at least as many
  // entries.
  size_t slots = 1;
  // O_DIRECT's alignment (1: a buffered read): a read that stops short of `need` after a
  // number of bytes that is not a multiple of it has met the file's end.
  uint64_t align = 1;
  // One completion handled at a time, the read it frees submitted before the next is handled:
  // for an `arrived` that blocks (RingReads::ReapOneAtATime).
  bool reap_one = false;
  // Names the ring in its own errors (io_uring_enter).
  std::string name;
};

// What ReadRequests did.
struct RingReadCounts {
  uint64_t submitted = 0;    // requests handed to the kernel
  uint64_t reads = 0;        // requests that returned bytes or the file's end
  uint64_t short_reads = 0;  // reads that returned part of what they asked, asked again
  uint64_t retries = 0;      // -EAGAIN and -EINTR, asked again
};

// The next read for free slot `slot` into *read; false when there is none now. A slot is free
// at the start and once `arrived` has seen its read.
using RingSource = std::function<bool(size_t slot, RingRead* read)>;
// The read of `slot` has its bytes: `got` (at least read.need) at read.dst. An error stops the
// loop: nothing more is asked of `next`, and the reads in flight are reaped.
using RingArrived = std::function<Status(size_t slot, const RingRead& read, uint64_t got)>;

// Reads what `next` hands out, up to rules.slots at a time, free slots handed out in the order
// they freed (at the start: 0, 1, ...), until it hands out nothing and every read has arrived;
// each arrival is given to `arrived` on this thread. The first error is returned: a read's
// (naming its path, offset and length), kBadInput "truncated" for one that met the file's end
// before `need`, or `arrived`'s. *counts, where given, gets what was done.
Status ReadRequests(io_uring* ring, const RingRules& rules, const RingSource& next,
                    const RingArrived& arrived, RingReadCounts* counts = nullptr);

}  // namespace loadbench
