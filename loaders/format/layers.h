// Layers of a model, from its tensor names: the order a first forward pass uses the tensors
// in, the tensors that must be in memory before the first layer can run, and the groups a
// layer-at-a-time strategy maps one after the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loaders/format/tensor_table.h"

namespace loadbench {

// The layer number in a tensor name: the number after a "blk.", "layers.", "layer.", "h.",
// "block." or "blocks." component ("blk.3.attn_q.weight" and "model.layers.3.mlp.up.weight"
// are layer 3). nullopt for the tensors outside the layers: embeddings, final norm, output.
std::optional<int> LayerOf(const std::string& name);

// Tensor indices in the order a first forward pass uses them: the tensors outside the layers
// that come before the first layer tensor in table order (the embeddings), then every layer in
// ascending number (table order within a layer), then the rest (final norm, output).
std::vector<size_t> ForwardOrder(const TensorTable& table);

// Which tensors must have been used before "layer 0 is done": the tensors before the layers
// (as in ForwardOrder) and those of the lowest-numbered layer. All false when no tensor name
// has a layer number: such a file has no first layer to time.
std::vector<bool> FirstUseSet(const TensorTable& table);

// The bytes a group's tensors occupy in one shard (file) of the model.
struct ShardRange {
  uint32_t shard = 0;  // index into TensorTable::shards
  uint64_t begin = 0;  // the smallest offset of the group's tensors in that shard's file
  uint64_t end = 0;    // the largest tensor end; begin == end when they are all empty there
};

// Consecutive tensors (table order) of one layer, and the file bytes they lie in. A sharded
// model's layer may span shards: `ranges` has one range per shard that holds any of the
// group's tensors, in shard order (a single file: exactly one).
struct TensorGroup {
  std::vector<size_t> tensors;  // table indices, ascending and consecutive
  std::optional<int> layer;
  // The first range's begin and end: the whole group's in a single file. begin == end for a
  // group of empty tensors.
  uint64_t begin = 0;
  uint64_t end = 0;
  std::vector<ShardRange> ranges;
};

// The table cut into maximal runs of consecutive tensors with the same layer number (tensors
// outside the layers form runs of their own). Table order is kept, so a consumer that walks the
// groups in turn reads the tensors in the order the file's checksum covers them.
std::vector<TensorGroup> LayerGroups(const TensorTable& table);

}  // namespace loadbench
