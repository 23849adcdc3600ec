// The format-independent result of reading a weight file's header: where every tensor's bytes
// are. Formats (WLF, safetensors, GGUF) produce it; strategies consume it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench {

struct TensorInfo {
  std::string name;
  std::string dtype;            // lower-case name: "bf16", "f16", "f32", ...
  std::vector<uint64_t> shape;  // outermost dimension first
  uint64_t offset = 0;          // absolute byte offset in its file (its shard)
  uint64_t size = 0;            // bytes
  uint32_t shard = 0;           // index into TensorTable::shards: the file holding the bytes
};

// One file of a model. A single weight file is a model of one shard.
struct ShardInfo {
  std::string path;
  uint64_t file_size = 0;
  uint64_t data_offset = 0;   // start of this file's data area
  uint64_t tensor_bytes = 0;  // sum of its tensors' sizes
  size_t first_tensor = 0;    // its tensors are [first_tensor, first_tensor + tensor_count)
  size_t tensor_count = 0;    // of the model's table
  std::optional<uint64_t> expected_checksum;  // the file's own, over its tensors, if stored
};

// A model: its tensors, in table order, and the files (shards) holding them. Tensors are in
// shard order (every tensor of shard 0, then of shard 1, ...), each shard's in its data order,
// so that a model loaded shard by shard delivers its views in table order.
struct TensorTable {
  std::string format;  // "wlf", "safetensors", "gguf" (every shard's)
  // How the model was given: "file" (one weight file), "index" (a *.index.json naming the
  // shards), "gguf-split" (the first of NAME-00001-of-0000N.gguf).
  std::string layout = "file";
  uint64_t file_size = 0;     // bytes, as validated against the real file; a model: all shards'
  uint64_t data_offset = 0;   // start of the data area (a sharded model: the first shard's)
  uint64_t tensor_bytes = 0;  // sum of all tensor sizes
  // xxh3-64 over all tensor bytes in table order: the model's, the same sharded or not
  std::optional<uint64_t> expected_checksum;
  // Tensor elements are stored big-endian (a WLF file written with `gen --endian big`): a
  // consumer that computes with them must byte-swap them first (the `byteswap` transform).
  bool big_endian = false;
  nlohmann::ordered_json header;  // format-specific header fields, for `inspect`
  std::vector<TensorInfo> tensors;
  std::vector<ShardInfo> shards;  // at least one once read: a single file is shard 0
  bool sharded() const { return shards.size() > 1; }
};

// Where a writer puts everything in a new file: each format's planner fills it and the
// generator writes by it. Offsets are absolute.
struct FileLayout {
  uint64_t align = 4096;     // tensor alignment (1 where the format has none)
  uint64_t data_offset = 0;  // the head, [0, data_offset), is the format's header
  uint64_t data_end = 0;     // the generator writes tensors and zero padding up to here
  uint64_t file_size = 0;    // data_end plus any trailer (WLF's tail sentinel)
  std::vector<uint64_t> tensor_offsets;
  std::vector<uint64_t> tensor_sizes;
};

}  // namespace loadbench
