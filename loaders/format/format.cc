#include "loaders/format/format.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loaders/base/file_io.h"
#include "loaders/format/gguf.h"
#include "loaders/format/safetensors.h"
#include "loaders/format/wlf.h"

namespace loadbench {

namespace {

Status ReadByFormat(int fd, const std::string& path, TensorTable* out) {
  uint64_t size;
  LB_RETURN_IF_ERROR(FileSize(fd, path, &size));
  if (size == 0) return Status::BadInput(fmt::format("{}: empty file", path));
  if (size < 4) {
    return Status::BadInput(
        fmt::format("{}: {} bytes is too short for any weight format", path, size));
  }
  unsigned char head[16] = {};
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(size, sizeof head));
  LB_RETURN_IF_ERROR(PreadExact(fd, path, head, head_len, 0));
  uint32_t magic = 0;
  if (head_len >= sizeof magic) std::memcpy(&magic, head, sizeof magic);
  if (magic == kWlfMagic || magic == kWlfMagicSwapped) return ReadWlf(fd, path, size, out);
  if (magic == kGgufMagic) return ReadGguf(fd, path, size, out);
  if (LooksLikeSafetensors(head, head_len)) return ReadSafetensors(fd, path, size, out);
  return Status::BadInput(fmt::format(
      "{}: unknown format (first bytes {:02x}; expected WLF or GGUF magic at byte 0, or a "
      "safetensors JSON header starting with '{{' at byte 8)",
      path, fmt::join(head, head + std::min<size_t>(head_len, 9), " ")));
}

}  // namespace

Status ReadTensorTable(int fd, const std::string& path, TensorTable* out) {
  LB_RETURN_IF_ERROR(ReadByFormat(fd, path, out));
  out->layout = "file";
  out->shards = {ShardInfo{.path = path,
                           .file_size = out->file_size,
                           .data_offset = out->data_offset,
                           .tensor_bytes = out->tensor_bytes,
                           .first_tensor = 0,
                           .tensor_count = out->tensors.size(),
                           .expected_checksum = out->expected_checksum}};
  return Status::Ok();
}

Status ReadTensorTableFromPath(const std::string& path, TensorTable* out) {
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  return ReadTensorTable(fd.get(), path, out);
}

}  // namespace loadbench
