// A generated model in shards, as the real tools ship them: the split of the tensor list into
// contiguous shards (by count, balancing bytes, or by a largest shard size as Hugging Face's
// max_shard_size), the file names (NAME-00001-of-0000N.EXT), and the index of the
// safetensors and WLF forms (NAME.EXT.index.json, Hugging Face's shape), and the plan of a
// sharded model's files. GGUF has no index: its splits carry llama.cpp's split.* keys (see
// gguf_encoder.cc). sharded.cc writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"
#include "loaders/format/wlf.h"

namespace loadbench {

struct GenOptions;
struct GenPlan;
class GenEncoder;

// The most shards a model may have: five digits in the name, and GGUF's split.count is a u16.
inline constexpr uint64_t kMaxShards = 65535;

// One shard of a generated model: tensors [first_tensor, first_tensor + tensor_count) of the
// model's list, and (once planned by the generator) its own file's layout.
struct GenShard {
  std::string path;  // where it is written: DIR/NAME-0000k-of-0000N.EXT
  size_t first_tensor = 0;
  size_t tensor_count = 0;
  uint64_t tensor_bytes = 0;
  FileLayout layout;  // offsets within the shard's own file
};

// Splits tensors of `sizes` bytes, in order, into `n` contiguous shards of about equal bytes:
// shard k ends at the tensor boundary nearest to k/n of the bytes, every shard holding at least
// one tensor. kBadInput when n is 0 or more than the tensors.
Status SplitByCount(const std::vector<uint64_t>& sizes, uint64_t n, std::vector<GenShard>* out);

// Splits tensors of `sizes` bytes, in order, as Hugging Face's max_shard_size does: a new shard
// starts when the next tensor would take the current one past `max_bytes` (tensor bytes); a
// tensor larger than that gets a shard of its own. kBadInput when max_bytes is 0.
Status SplitBySize(const std::vector<uint64_t>& sizes, uint64_t max_bytes,
                   std::vector<GenShard>* out);

// The path of shard k (0-based) of n for the model written as `out_path` (DIR/NAME.EXT):
// DIR/NAME-0000k+1-of-0000n.EXT, as ShardFileName names it. An out_path without an extension
// takes the format's name as one.
std::string ShardPath(const std::string& out_path, const std::string& format, size_t k, size_t n);

// The index of a sharded safetensors or WLF model written as `out_path`: out_path.index.json.
std::string IndexPath(const std::string& out_path);

// The index's JSON: {"metadata": {"total_size", "loadbench.xxh3_64", "loadbench.gen_spec"},
// "weight_map": {tensor name: shard file name without folder}}, keys sorted as Hugging Face's
// writers sort them.
nlohmann::json ShardIndexJson(const std::vector<std::string>& tensor_names,
                              const std::vector<GenShard>& shards, uint64_t total_size,
                              uint64_t model_checksum, uint64_t spec_id);

// The index's text as written: ShardIndexJson indented by 2, and a newline. Its length does
// not depend on the checksum (16 hex digits).
std::string ShardIndexText(const nlohmann::json& index);

// The sharding of a plan, at most one of opts.shards and opts.shard_size given: splits the
// model's tensors into shards as the options say and plans each shard's file (its path and
// its layout, as `encoder` lays it out), the index, the model's path and the bytes of every
// file. kBadInput names a sharding that cannot be.
Status PlanShards(const GenOptions& opts, const GenEncoder& encoder, GenPlan* plan);

// The tensors of shard `s` of `plan`, in order.
std::vector<WlfTensorSpec> ShardTensors(const GenPlan& plan, const GenShard& s);

// The index of a sharded plan with the model's checksum `model_checksum` (ShardIndexJson of
// its tensors' names, its shards, its tensor bytes and its spec id).
nlohmann::json PlanIndexJson(const GenPlan& plan, uint64_t model_checksum);

}  // namespace loadbench
