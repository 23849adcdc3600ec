// Parts of one job done in any order by several threads, and waits for the first n of them: the
// destination's blocks as they are populated (fault_ahead.h), a load's chunks as they arrive
// (owned hands out each tensor's view once the chunks below its end are in).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

class Prefix final {
 public:
  // `parts` parts, none done.
  void Reset(size_t parts);
  // Part i is done.
  void Done(size_t i);
  // The job failed: every waiter, now and later, gets `st` (the first failure is kept).
  void Fail(const Status& st);
  // Waits until parts [0, n) are done (n past the end: all of them); the failure where the job
  // failed. Its wait is added to waited_s.
  Status WaitFor(size_t n);
  double waited_s() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> done_;
  size_t ready_ = 0;  // [0, ready_) are done
  Status error_;
  double waited_s_ = 0;
};

}  // namespace loadbench
