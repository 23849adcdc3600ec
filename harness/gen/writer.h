// Inside harness/gen: the parallel writer of a file's data area, and the progress it shows.
// Worker threads fill 8 MiB chunks of the data area in parallel (FillTensorBytes) and one
// writer thread hashes and writes them in file order. A bounded ring of chunk buffers keeps
// memory small, and write-behind (sync_file_range + POSIX_FADV_DONTNEED) keeps the page cache
// from filling with dirty pages, so the speed shown is the disk's and the new file starts cold.
#pragma once

#include <xxhash.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/gen/generator.h"
#include "harness/gen/publish.h"
#include "loaders/base/status.h"

namespace loadbench {

struct XxhFree {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

// Progress on stderr: on a terminal a line redrawn each second, else a line per 10%.
class Progress {
 public:
  Progress(bool on, uint64_t total);
  // `done` of the total bytes written; `final` prints the last line whatever the time.
  void Update(uint64_t done, bool final);

 private:
  bool on_;
  uint64_t total_;
  bool tty_;
  int next_pct_ = 10;
  std::chrono::steady_clock::time_point start_, last_;
};

// Writes the data area of `layout` (of `tensors`, the model's from number `first_tensor` on:
// their content depends on the model-wide index) into `tmp` with opts.threads workers (0: one
// per CPU); *checksum gets the xxh3-64 of the tensor bytes, and `model_state`, when given, the
// same bytes. Progress counts from `progress_base`.
Status WriteData(const GenOptions& opts, const GenPlan& plan, const FileLayout& layout,
                 const std::vector<WlfTensorSpec>& tensors, size_t first_tensor,
                 const TempFile& tmp, Progress* progress, uint64_t progress_base,
                 XXH3_state_t* model_state, uint64_t* checksum);

}  // namespace loadbench
