// The files of a model as the strategies that read a sharded model themselves (direct_ring,
// pool) hold them: each opened once, with its place in the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"
#include "loaders/format/model.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

// One shard, open for reading. A strategy's own shard type derives from it.
struct ShardFile {
  std::string path;
  uint64_t file_size = 0;
  size_t first = 0;  // its tensors: [first, first + count) of the table
  size_t count = 0;
  UniqueFd fd;
};

// Opens `info`'s file with `flags` (O_DIRECT or 0) into `out`. kUnsupported naming the file
// where its filesystem refuses O_DIRECT (tmpfs).
Status OpenShardFile(const ShardInfo& info, int flags, ShardFile* out);

// Every shard of `table`, in shard order, opened with `flags`; a single file at `path` is the
// model of one shard. S derives from ShardFile.
template <typename S>
Status OpenShards(const std::string& path, const TensorTable& table, int flags,
                  std::vector<S>* out) {
  const std::vector<ShardInfo> shards = ShardsOf(path, table);
  out->clear();
  out->resize(shards.size());
  for (size_t k = 0; k < shards.size(); ++k) {
    LB_RETURN_IF_ERROR(OpenShardFile(shards[k], flags, &(*out)[k]));
  }
  return Status::Ok();
}

}  // namespace loadbench
