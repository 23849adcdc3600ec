#include "loaders/blocks/prefix.h"

#include <algorithm>
#include <chrono>

namespace loadbench {

void Prefix::Reset(size_t parts) {
  std::lock_guard<std::mutex> lock(mu_);
  done_.assign(parts, false);
  ready_ = 0;
  error_ = Status::Ok();
  waited_s_ = 0;
}

void Prefix::Done(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  done_[i] = true;
  while (ready_ < done_.size() && done_[ready_]) ++ready_;
  cv_.notify_all();
}

void Prefix::Fail(const Status& st) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) error_ = st;
  cv_.notify_all();
}

Status Prefix::WaitFor(size_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ready_ >= std::min(n, done_.size()) || !error_.ok(); });
  waited_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return error_;
}

double Prefix::waited_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waited_s_;
}

}  // namespace loadbench
