#include "loaders/format/format.h"

#include <cstring>

#include <fmt/format.h>

#include "loaders/file_io.h"
#include "loaders/format/wlf.h"

namespace loadbench {

Status ReadTensorTable(int fd, const std::string& path, TensorTable* out) {
  uint64_t size;
  LB_RETURN_IF_ERROR(FileSize(fd, path, &size));
  if (size == 0) return Status::BadInput(fmt::format("{}: empty file", path));
  unsigned char head[4] = {};
  if (size < sizeof head) {
    return Status::BadInput(fmt::format("{}: {} bytes is too short for any weight format", path,
                                        size));
  }
  LB_RETURN_IF_ERROR(PreadExact(fd, path, head, sizeof head, 0));
  uint32_t magic;
  std::memcpy(&magic, head, sizeof magic);
  if (magic == kWlfMagic || magic == kWlfMagicSwapped) return ReadWlf(fd, path, size, out);
  return Status::BadInput(fmt::format(
      "{}: unknown format (first bytes {:02x} {:02x} {:02x} {:02x}; expected a WLF file)", path,
      head[0], head[1], head[2], head[3]));
}

Status ReadTensorTableFromPath(const std::string& path, TensorTable* out) {
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  return ReadTensorTable(fd.get(), path, out);
}

}  // namespace loadbench
