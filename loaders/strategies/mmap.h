// The shared part of the mmap family: map the whole file read-only (MAP_PRIVATE, or MAP_SHARED
// as llama.cpp does), plus extra mmap flags such as MAP_POPULATE, apply one madvise advice (or
// none) to the data area, and hand out views into the mapping.
#pragma once

#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {

struct MmapOptions {
  int map_flags = 0;                 // added to MAP_PRIVATE or MAP_SHARED (MAP_POPULATE)
  int advice = -1;                   // an MADV_* value applied to the data area, -1 for none
  const char* advice_name = "none";  // names `advice` in error messages
  // MAP_SHARED instead of MAP_PRIVATE. Read-only either way; a writable view (an in-place
  // transform) needs MAP_PRIVATE, so Load refuses RequestWritable with kUnsupported.
  bool shared = false;
  // posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) before mapping: the file's read-ahead
  // window doubled, for the faults of the mapping as for reads.
  bool fadvise_sequential = false;
  // posix_madvise(POSIX_MADV_WILLNEED) over the whole mapping once it is made (llama.cpp's
  // prefetch, beside MAP_POPULATE).
  bool willneed_all = false;
};

class MmapLoader final : public Loader {
 public:
  explicit MmapLoader(const MmapOptions& options) : options_(options) {}
  // `map_flags` are added to MAP_PRIVATE; `advice` is an MADV_* value applied to the data area,
  // or -1 for none; `advice_name` names it in error messages.
  MmapLoader(int map_flags, int advice, const char* advice_name) {
    options_.map_flags = map_flags;
    options_.advice = advice;
    options_.advice_name = advice_name;
  }

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override;

 private:
  MmapOptions options_;
  Mapping mapping_;
};

}  // namespace loadbench
