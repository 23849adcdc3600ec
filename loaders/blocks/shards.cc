#include "loaders/blocks/shards.h"

namespace loadbench {

Status OpenShardFile(const ShardInfo& info, int flags, ShardFile* out) {
  out->path = info.path;
  out->file_size = info.file_size;
  out->first = info.first_tensor;
  out->count = info.tensor_count;
  return OpenReadOnly(info.path, flags, &out->fd);
}

}  // namespace loadbench
