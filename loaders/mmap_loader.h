// The shared part of the mmap family: map the whole file read-only and MAP_PRIVATE (plus extra
// mmap flags such as MAP_POPULATE), apply one madvise advice (or none) to the data area, and
// hand out views into the mapping.
#pragma once

#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/loader.h"

namespace loadbench {

class MmapLoader final : public Loader {
 public:
  // `map_flags` are added to MAP_PRIVATE; `advice` is an MADV_* value applied to the data area,
  // or -1 for none; `advice_name` names it in error messages.
  MmapLoader(int map_flags, int advice, const char* advice_name)
      : map_flags_(map_flags), advice_(advice), advice_name_(advice_name) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override;

 private:
  int map_flags_;
  int advice_;
  const char* advice_name_;
  Mapping mapping_;
};

}  // namespace loadbench
