// Destination memory faulted in by threads of its own ahead of the reads that fill it. On a VM
// the first touch of a page is the dearest part of a copy (a 4 KiB page costs microseconds, a
// 2 MiB one tens of them); done by the reader it stalls the read. Here the region is cut into
// blocks populated in order with MADV_POPULATE_WRITE (Linux 5.14; before it, a write to every
// page), and a reader waits only until the block its bytes land in is ready.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/blocks/prefix.h"

namespace loadbench {

class FaultAhead final {
 public:
  FaultAhead() = default;
  FaultAhead(const FaultAhead&) = delete;
  FaultAhead& operator=(const FaultAhead&) = delete;
  ~FaultAhead() { (void)Finish(); }

  // Starts `threads` threads populating [base, base + bytes) in blocks of `block` bytes, lowest
  // first. Messages name `path`.
  void Start(std::byte* base, uint64_t bytes, uint64_t block, unsigned threads,
             const std::string& path);
  // Waits until [0, end) of the region is populated; the population's error where it failed.
  Status WaitFor(uint64_t end) { return blocks_.WaitFor((end + block_ - 1) / block_); }
  // Waits for every thread; the first error any met.
  Status Finish();

  // How the pages were populated: "madvise" (MADV_POPULATE_WRITE) or "touch" (a write per
  // page, where the kernel lacks it); the threads' seconds populating, added up; the readers'
  // seconds waiting for it, added up.
  std::string method() const { return touch_ ? "touch" : "madvise"; }
  double busy_s() const;
  double waited_s() const { return blocks_.waited_s(); }

 private:
  void Work();
  Status Populate(std::byte* p, uint64_t len);

  std::byte* base_ = nullptr;
  uint64_t bytes_ = 0, block_ = 1;
  std::string path_;
  uint64_t count_ = 0;             // blocks
  std::atomic<uint64_t> next_{0};  // the next block to take
  std::atomic<bool> touch_{false}, failed_{false};
  std::vector<std::thread> threads_;
  Prefix blocks_;
  Status error_;
  mutable std::mutex mu_;
  double busy_s_ = 0;
};

}  // namespace loadbench
