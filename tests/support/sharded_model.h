// Test support: small sharded models, written on the fly as several weight files and joined as
// the model reader joins them, and their checksum read the plain way. For tests only; linked
// into loadbench_tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/format/tensor_table.h"
#include "loaders/format/wlf.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench::test {

struct ShardedModel {
  // The model's own path: a stand-in index in the shards' folder (model.index.json) that names
  // the model, as a real index or first split does (shm names its segment after it). Strategies
  // are given `table`; nothing reads this file.
  std::string path;
  TensorTable table;      // JoinShards of every shard's own table
  uint64_t checksum = 0;  // PreadModelChecksum(table)
};

// `n` shards generated (harness/gen, llama preset) in `format`, each of about `bytes_each`,
// shard k with seed k + 1, written to `dir` as NAME-0000k-of-0000n.EXT. Every shard holds
// embeddings, layers and output tensors, so layer groups cross every shard boundary.
ShardedModel GenerateShardedModel(const TempDir& dir, const std::string& format, size_t n,
                                  uint64_t bytes_each);

// WLF shards of the given tensors (one list per shard; shard k written with seed k + 1 and
// `align`): a layer whose tensors are split between two lists spans two shards.
ShardedModel WriteWlfShardedModel(const TempDir& dir,
                                  const std::vector<std::vector<WlfTensorSpec>>& shards,
                                  uint64_t align = 4096);

// Three WLF shards with awkward sizes (an empty tensor, odd byte counts, one larger than a
// page) whose layers 0 and 1 each cross a shard boundary.
std::vector<std::vector<WlfTensorSpec>> LayersAcrossShards();

// xxh3-64 of every tensor's bytes, each read with pread from its shard's file, in table order:
// the reference a load of the model must match. Throws std::runtime_error when a read fails.
uint64_t PreadModelChecksum(const TensorTable& table);

}  // namespace loadbench::test
