#include "loaders/format/model.h"

#include <fmt/format.h>

#include "loaders/format/format.h"

namespace loadbench {

Status ReadModel(const std::string& path, TensorTable* out) {
  return ReadTensorTableFromPath(path, out);
}

Status JoinShards(const std::vector<TensorTable>& shards, TensorTable* out) {
  TensorTable m;
  for (size_t k = 0; k < shards.size(); ++k) {
    const TensorTable& s = shards[k];
    if (s.shards.size() != 1) {
      return Status::BadInput(fmt::format("{}: not a single weight file",
                                          s.shards.empty() ? "?" : s.shards[0].path));
    }
    if (k == 0) {
      m.format = s.format;
      m.big_endian = s.big_endian;
      m.data_offset = s.data_offset;
      m.header = s.header;
    } else if (s.format != m.format || s.big_endian != m.big_endian) {
      return Status::BadInput(fmt::format(
          "{}: a {}{} file among shards that are {}{} ({})", s.shards[0].path, s.format,
          s.big_endian ? " big-endian" : "", m.format, m.big_endian ? " big-endian" : "",
          shards[0].shards[0].path));
    }
    ShardInfo info = s.shards[0];
    info.first_tensor = m.tensors.size();
    for (TensorInfo t : s.tensors) {
      t.shard = static_cast<uint32_t>(k);
      m.tensors.push_back(std::move(t));
    }
    m.file_size += s.file_size;
    m.tensor_bytes += s.tensor_bytes;
    m.shards.push_back(std::move(info));
  }
  m.layout = shards.size() > 1 ? "index" : "file";
  if (shards.size() == 1) m.expected_checksum = shards[0].expected_checksum;
  *out = std::move(m);
  return Status::Ok();
}

TensorTable ShardTable(const TensorTable& model, size_t k) {
  const ShardInfo& s = model.shards.at(k);
  TensorTable t;
  t.format = model.format;
  t.file_size = s.file_size;
  t.data_offset = s.data_offset;
  t.tensor_bytes = s.tensor_bytes;
  t.expected_checksum = s.expected_checksum;
  t.big_endian = model.big_endian;
  t.tensors.assign(model.tensors.begin() + static_cast<ptrdiff_t>(s.first_tensor),
                   model.tensors.begin() + static_cast<ptrdiff_t>(s.first_tensor + s.tensor_count));
  for (TensorInfo& ti : t.tensors) ti.shard = 0;
  t.shards = {s};
  t.shards[0].first_tensor = 0;
  return t;
}

std::string ShardFileName(const std::string& name, size_t k, size_t n, const std::string& ext) {
  return fmt::format("{}-{:05d}-of-{:05d}.{}", name, k + 1, n, ext);
}

}  // namespace loadbench
