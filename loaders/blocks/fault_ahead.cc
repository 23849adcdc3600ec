#include "loaders/blocks/fault_ahead.h"

#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14's value; older headers lack it
#endif

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kPage = 4096;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Whether this kernel predates MADV_POPULATE_WRITE (Linux 5.14), which it then refuses with
// EINVAL, as a newer one refuses memory it cannot write: only the first is a reason to touch.
bool KernelBeforePopulateWrite() {
  utsname u{};
  int major = 0, minor = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major < 5 || (major == 5 && minor < 14);
}

}  // namespace

void FaultAhead::Start(std::byte* base, uint64_t bytes, uint64_t block, unsigned threads,
                       const std::string& path) {
  base_ = base, bytes_ = bytes, block_ = std::max<uint64_t>(block, kPage), path_ = path;
  count_ = (bytes + block_ - 1) / block_;
  blocks_.Reset(count_);
  const auto n = static_cast<unsigned>(std::min<uint64_t>(std::max(threads, 1u), count_));
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { Work(); });
}

Status FaultAhead::Populate(std::byte* p, uint64_t len) {
  while (!touch_.load(std::memory_order_relaxed)) {
    if (::madvise(p, len, MADV_POPULATE_WRITE) == 0) return Status::Ok();
    if (errno == EINTR || errno == EAGAIN) continue;
    if (errno != EINVAL || !KernelBeforePopulateWrite()) {
      return Status::FromErrno(
          fmt::format("{}: madvise(MADV_POPULATE_WRITE) of {} bytes of the destination", path_,
                      len),
          errno);
    }
    touch_.store(true, std::memory_order_relaxed);
  }
  auto* bytes = reinterpret_cast<volatile unsigned char*>(p);
  for (uint64_t at = 0; at < len; at += kPage) bytes[at] = 0;
  return Status::Ok();
}

void FaultAhead::Work() {
  const auto t0 = Clock::now();
  for (;;) {
    const uint64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= count_ || failed_.load(std::memory_order_relaxed)) break;
    const uint64_t at = i * block_;
    const Status st = Populate(base_ + at, std::min(block_, bytes_ - at));
    if (st.ok()) {
      blocks_.Done(i);
      continue;
    }
    failed_.store(true, std::memory_order_relaxed);
    blocks_.Fail(st);
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  busy_s_ += Since(t0);
}

Status FaultAhead::Finish() {
  for (auto& t : threads_) t.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

double FaultAhead::busy_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_s_;
}

}  // namespace loadbench
