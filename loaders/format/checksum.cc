#include "loaders/format/checksum.h"

#include <fcntl.h>

#include <algorithm>
#include <memory>
#include <vector>

#include <xxhash.h>

#include "loaders/base/file_io.h"
#include "loaders/remote/source.h"

namespace loadbench {

uint64_t ChecksumTensors(const std::vector<std::span<const std::byte>>& views) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  for (const std::span<const std::byte>& v : views)
    XXH3_64bits_update(state.get(), v.data(), v.size());
  return XXH3_64bits_digest(state.get());
}

namespace {

constexpr uint64_t kChunk = 8ull << 20;

Status HashTensors(const ByteSource& src, const TensorTable& table, size_t first, size_t count,
                   std::vector<std::byte>* buf, XXH3_state_t* state) {
  for (size_t i = first; i < first + count; ++i) {
    const TensorInfo& t = table.tensors[i];
    for (uint64_t done = 0; done < t.size;) {
      const uint64_t n = std::min<uint64_t>(buf->size(), t.size - done);
      LB_RETURN_IF_ERROR(src.ReadAt(buf->data(), n, t.offset + done));
      XXH3_64bits_update(state, buf->data(), n);
      done += n;
    }
  }
  return Status::Ok();
}

}  // namespace

Status ChecksumFile(const ByteSource& src, const TensorTable& table, uint64_t* out) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<std::byte> buf(std::min<uint64_t>(kChunk, std::max<uint64_t>(table.tensor_bytes, 1)));
  LB_RETURN_IF_ERROR(HashTensors(src, table, 0, table.tensors.size(), &buf, state.get()));
  *out = XXH3_64bits_digest(state.get());
  return Status::Ok();
}

Status ChecksumModel(const TensorTable& model, uint64_t* out) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<std::byte> buf(std::min<uint64_t>(kChunk, std::max<uint64_t>(model.tensor_bytes, 1)));
  for (const ShardInfo& s : model.shards) {
    std::unique_ptr<ByteSource> src;
    LB_RETURN_IF_ERROR(OpenSource(s.path, &src));
    if (const FileSource* f = dynamic_cast<const FileSource*>(src.get())) {
      ::posix_fadvise(f->fd(), 0, 0, POSIX_FADV_SEQUENTIAL);  // advice only
    }
    LB_RETURN_IF_ERROR(HashTensors(*src, model, s.first_tensor, s.tensor_count, &buf, state.get()));
  }
  *out = XXH3_64bits_digest(state.get());
  return Status::Ok();
}

}  // namespace loadbench
