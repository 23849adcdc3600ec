// A model as it is shipped: one weight file, or shards. Forms read (docs/formats.md, "Sharded
// models"):
// - a single weight file (WLF, safetensors, GGUF), as ReadTensorTable reads it;
// - an index: a JSON file (Hugging Face's `model.safetensors.index.json`, or loadbench's
//   `NAME.wlf.index.json` of the same shape) whose `weight_map` maps each tensor name to its
//   shard file, relative to the index's own folder; `metadata.total_size` when present must
//   equal the tensor bytes; `metadata["loadbench.xxh3_64"]`, when present, is the model's
//   checksum. All shards are of one format, detected from their content;
// - a folder holding exactly one such index;
// - the first file of a GGUF split (NAME-00001-of-0000N.gguf, as llama.cpp's gguf-split
//   writes it): every split carries split.no, split.count and split.tensors.count, and the
//   others are found beside it by name.
// The model's table lists every shard's tensors, shard by shard, in each shard's table order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

// Reads the model at `path` (any form above). Every shard is validated as its format's reader
// does, and the shards against the index or against each other. Errors are kBadInput with one
// line naming the file at fault and the reason; an index may name no file outside its folder.
Status ReadModel(const std::string& path, TensorTable* out);

// The model whose shards are `shards` (each as ReadTensorTable read it), in this order: their
// tensors one shard after another, sizes and byte counts summed, data_offset the first's;
// expected_checksum unset for several (a model's is stored apart from its shards'); layout
// "file" for one and "index" for more (the caller sets what it read). kBadInput naming both
// files when the shards differ in format or byte order.
Status JoinShards(const std::vector<TensorTable>& shards, TensorTable* out);

// Shard `k` of `model` as a table of its own, as ReadTensorTable reads that file: its tensors
// (offsets unchanged, shard 0), its size, data offset and own checksum, one shard.
TensorTable ShardTable(const TensorTable& model, size_t k);

// The shards a strategy given (`path`, `table`) reads: the table's, with a single file's at
// `path` as given (one shard of every tensor also when the table was built without shards).
std::vector<ShardInfo> ShardsOf(const std::string& path, const TensorTable& table);

// "NAME-00003-of-00016.EXT": the name writers give shard `k` (0-based) of `n`, as the
// Hugging Face and llama.cpp tools do (five digits each).
std::string ShardFileName(const std::string& name, size_t k, size_t n, const std::string& ext);

}  // namespace loadbench
