#include "loaders/blocks/ring_reads.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace loadbench {

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
    } while (::io_uring_peek_cqe(ring, &cqe) == 0);
    if (error.ok()) Reaped();
  }
  return error;
}

}  // namespace loadbench
