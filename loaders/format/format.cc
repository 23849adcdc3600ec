#include "loaders/format/format.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loaders/base/file_io.h"
#include "loaders/format/gguf.h"
#include "loaders/format/safetensors.h"
#include "loaders/format/wlf.h"
#include "loaders/remote/source.h"

namespace loadbench {

namespace {

Status ReadByFormat(const ByteSource& src, TensorTable* out) {
  const std::string& path = src.name();
  const uint64_t size = src.size();
  if (size == 0) return Status::BadInput(fmt::format("{}: empty file", path));
  if (size < 4) {
    return Status::BadInput(
        fmt::format("{}: {} bytes is too short for any weight format", path, size));
  }
  unsigned char head[16] = {};
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(size, sizeof head));
  LB_RETURN_IF_ERROR(src.ReadAt(head, head_len, 0));
  uint32_t magic = 0;
  if (head_len >= sizeof magic) std::memcpy(&magic, head, sizeof magic);
  if (magic == kWlfMagic || magic == kWlfMagicSwapped) return ReadWlf(src, out);
  if (magic == kGgufMagic) return ReadGguf(src, out);
  if (LooksLikeSafetensors(head, head_len)) return ReadSafetensors(src, out);
  return Status::BadInput(fmt::format(
      "{}: unknown format (first bytes {:02x}; expected WLF or GGUF magic at byte 0, or a "
      "safetensors JSON header starting with '{{' at byte 8)",
      path, fmt::join(head, head + std::min<size_t>(head_len, 9), " ")));
}

}  // namespace

Status ReadTensorTable(const ByteSource& src, TensorTable* out) {
  LB_RETURN_IF_ERROR(ReadByFormat(src, out));
  out->layout = "file";
  out->shards = {ShardInfo{.path = src.name(),
                           .file_size = out->file_size,
                           .data_offset = out->data_offset,
                           .tensor_bytes = out->tensor_bytes,
                           .first_tensor = 0,
                           .tensor_count = out->tensors.size(),
                           .expected_checksum = out->expected_checksum}};
  return Status::Ok();
}

Status ReadTensorTableFromPath(const std::string& path, TensorTable* out) {
  std::unique_ptr<ByteSource> src;
  LB_RETURN_IF_ERROR(OpenSource(path, &src));
  return ReadTensorTable(*src, out);
}

}  // namespace loadbench
