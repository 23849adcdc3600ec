#include "loaders/blocks/ring_reads.h"

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include <fmt/format.h>

namespace loadbench {
namespace {

// ReadRequests as a RingReads: a read per busy slot, asked again until its bytes are there.
class RequestLoop final : private RingReads {
 public:
  RequestLoop(const RingRules& rules, const RingSource& next, const RingArrived& arrived)
      : rules_(rules), next_(next), arrived_(arrived), reads_(rules.slots), got_(rules.slots) {
    for (size_t slot = 0; slot < rules.slots; ++slot) free_.push_back(slot);
    if (rules.reap_one) ReapOneAtATime();
  }

  Status Read(io_uring* ring, RingReadCounts* counts) {
    const Status st = Run(ring, rules_.name);
    counts_.submitted = submitted();
    if (counts != nullptr) *counts = counts_;
    return st;
  }

 private:
  // The rest of the read of `slot`, from what has arrived on.
  void Queue(io_uring* ring, size_t slot) {
    const RingRead& r = reads_[slot];
    const uint64_t got = got_[slot];
    io_uring_sqe* sqe = ::io_uring_get_sqe(ring);  // the ring has an entry per slot
    ::io_uring_prep_read(sqe, r.fd, r.dst + got, static_cast<unsigned>(r.len - got),
                         r.offset + got);
    ::io_uring_sqe_set_data64(sqe, slot);
    Prepared();
  }

  void QueueMore(io_uring* ring) override {
    while (!free_.empty()) {
      const size_t slot = free_.front();
      if (!next_(slot, &reads_[slot])) return;
      free_.pop_front();
      got_[slot] = 0;
      Queue(ring, slot);
    }
  }

  Status Complete(io_uring* ring, size_t slot, int res) override {
    const RingRead& r = reads_[slot];
    if (res == -EAGAIN || res == -EINTR) {
      ++counts_.retries;
      Queue(ring, slot);
      return Status::Ok();
    }
    const uint64_t at = r.offset + got_[slot];
    if (res < 0) {
      return Status::IOErrorFromErrno(
          fmt::format("{}: read of {} bytes at offset {}", r.path, r.len - got_[slot], at), -res);
    }
    ++counts_.reads;
    got_[slot] += static_cast<uint64_t>(res);
    if (got_[slot] >= r.need) {
      free_.push_back(slot);
      return arrived_(slot, r, got_[slot]);
    }
    // An O_DIRECT read stops inside a block only at the end of the file, and the rest could
    // not be asked for anyway: its offset would be unaligned.
    if (res == 0 || (rules_.align > 1 && static_cast<uint64_t>(res) % rules_.align != 0)) {
      return Status::BadInput(
          fmt::format("{}: truncated: the file ends at offset {}, the read needs it up to {}",
                      r.path, r.offset + got_[slot], r.offset + r.need));
    }
    ++counts_.short_reads;
    Queue(ring, slot);
    return Status::Ok();
  }

  const RingRules& rules_;
  const RingSource& next_;
  const RingArrived& arrived_;
  std::vector<RingRead> reads_;  // by slot: its read, the user_data of its requests
  std::vector<uint64_t> got_;    // by slot: the bytes of its read arrived so far
  std::deque<size_t> free_;      // slots without a read, in the order they freed
  RingReadCounts counts_;
};

}  // namespace

Status RingReads::Submit(io_uring* ring, const std::string& path) {
  const int ret = ::io_uring_submit_and_wait(ring, 1);
  if (ret >= 0) {
    queued_ -= static_cast<unsigned>(ret);
    in_kernel_ += static_cast<unsigned>(ret);
    submitted_ += static_cast<unsigned>(ret);
  } else if (ret != -EINTR) {
    return Status::IOErrorFromErrno(path + ": io_uring_enter", -ret);
  }
  return Status::Ok();
}

Status RingReads::Run(io_uring* ring, const std::string& path) {
  Status error;
  in_kernel_ = 0;
  while (true) {
    if (error.ok()) QueueMore(ring);
    if (error.ok() && queued_ > 0) error = Submit(ring, path);
    if (in_kernel_ == 0) {
      if (!error.ok() || queued_ == 0) break;
      continue;
    }
    io_uring_cqe* cqe = nullptr;
    if (const int ret = ::io_uring_wait_cqe(ring, &cqe); ret < 0) {
      if (ret == -EINTR) continue;
      // Nothing more can be reaped; what is still in flight is the ring teardown's to cancel.
      return error.ok() ? Status::IOErrorFromErrno(path + ": io_uring_wait_cqe", -ret) : error;
    }
    do {
      const auto slot = static_cast<size_t>(::io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      ::io_uring_cqe_seen(ring, cqe);
      --in_kernel_;
      if (!error.ok()) continue;
      error = Complete(ring, slot, res);
    } while (!reap_one_ && ::io_uring_peek_cqe(ring, &cqe) == 0);
    if (error.ok()) Reaped();
  }
  return error;
}

Status ReadRequests(io_uring* ring, const RingRules& rules, const RingSource& next,
                    const RingArrived& arrived, RingReadCounts* counts) {
  RequestLoop loop(rules, next, arrived);
  return loop.Read(ring, counts);
}

}  // namespace loadbench
