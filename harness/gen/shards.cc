#include "harness/gen/shards.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "harness/gen/encoder.h"
#include "harness/gen/generator.h"
#include "loaders/format/model.h"

namespace loadbench {
namespace {

GenShard Range(const std::vector<uint64_t>& prefix, size_t begin, size_t end) {
  GenShard s;
  s.first_tensor = begin;
  s.tensor_count = end - begin;
  s.tensor_bytes = prefix[end] - prefix[begin];
  return s;
}

}  // namespace

Status SplitByCount(const std::vector<uint64_t>& sizes, uint64_t n, std::vector<GenShard>* out) {
  const size_t count = sizes.size();
  if (n == 0) return Status::BadInput("shards must be at least 1");
  if (n > count) {
    return Status::BadInput(fmt::format(
        "shards {}: the model has only {} tensors, and a shard holds at least one", n, count));
  }
  std::vector<uint64_t> prefix(count + 1, 0);
  for (size_t i = 0; i < count; ++i) prefix[i + 1] = prefix[i] + sizes[i];
  const unsigned __int128 total = prefix[count];
  std::vector<GenShard> shards;
  size_t begin = 0;
  for (uint64_t k = 1; k <= n; ++k) {
    size_t end = count;
    if (k < n) {
      const auto goal = static_cast<uint64_t>(total * k / n);
      // The first boundary at or past the goal, or the one before it when that is nearer.
      end = static_cast<size_t>(std::lower_bound(prefix.begin(), prefix.end(), goal) -
                                prefix.begin());
      if (end > 0 && goal - prefix[end - 1] < (end <= count ? prefix[end] - goal : UINT64_MAX)) {
        --end;
      }
      // At least one tensor here and one for each shard after.
      end = std::clamp<size_t>(end, begin + 1, count - static_cast<size_t>(n - k));
    }
    shards.push_back(Range(prefix, begin, end));
    begin = end;
  }
  *out = std::move(shards);
  return Status::Ok();
}

Status SplitBySize(const std::vector<uint64_t>& sizes, uint64_t max_bytes,
                   std::vector<GenShard>* out) {
  if (max_bytes == 0) return Status::BadInput("shard size must be greater than 0");
  std::vector<uint64_t> prefix(sizes.size() + 1, 0);
  for (size_t i = 0; i < sizes.size(); ++i) prefix[i + 1] = prefix[i] + sizes[i];
  std::vector<GenShard> shards;
  size_t begin = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t current = prefix[i] - prefix[begin];
    if (i > begin && (current > max_bytes || sizes[i] > max_bytes - current)) {
      shards.push_back(Range(prefix, begin, i));
      begin = i;
    }
  }
  if (begin < sizes.size() || shards.empty()) shards.push_back(Range(prefix, begin, sizes.size()));
  if (shards.size() > kMaxShards) {
    return Status::BadInput(fmt::format("shard size {} gives {} shards; at most {} are supported",
                                        max_bytes, shards.size(), kMaxShards));
  }
  *out = std::move(shards);
  return Status::Ok();
}

std::string ShardPath(const std::string& out_path, const std::string& format, size_t k, size_t n) {
  const std::filesystem::path p(out_path);
  std::string ext = p.extension().string();
  std::string name = p.stem().string();
  if (ext.size() <= 1) {
    name = p.filename().string();
    ext = format;
  } else {
    ext = ext.substr(1);
  }
  return (p.parent_path() / ShardFileName(name, k, n, ext)).string();
}

std::string IndexPath(const std::string& out_path) { return out_path + ".index.json"; }

nlohmann::json ShardIndexJson(const std::vector<std::string>& tensor_names,
                              const std::vector<GenShard>& shards, uint64_t total_size,
                              uint64_t model_checksum, uint64_t spec_id) {
  nlohmann::json j;
  j["metadata"]["total_size"] = total_size;
  j["metadata"]["loadbench.xxh3_64"] = fmt::format("{:016x}", model_checksum);
  j["metadata"]["loadbench.gen_spec"] = fmt::format("{:016x}", spec_id);
  nlohmann::json& map = j["weight_map"] = nlohmann::json::object();
  for (const GenShard& s : shards) {
    const std::string file = std::filesystem::path(s.path).filename().string();
    for (size_t i = s.first_tensor; i < s.first_tensor + s.tensor_count; ++i) {
      map[tensor_names[i]] = file;
    }
  }
  return j;
}

std::string ShardIndexText(const nlohmann::json& index) { return index.dump(2) + "\n"; }

Status PlanShards(const GenOptions& opts, const GenEncoder& encoder, GenPlan* p) {
  const std::vector<uint64_t>& sizes = p->layout.tensor_sizes;
  std::vector<GenShard> shards;
  if (opts.shards != 0) {
    if (opts.shards > kMaxShards) {
      return Status::BadInput(
          fmt::format("shards {}: at most {} are supported", opts.shards, kMaxShards));
    }
    LB_RETURN_IF_ERROR(SplitByCount(sizes, opts.shards, &shards));
  } else {
    LB_RETURN_IF_ERROR(SplitBySize(sizes, opts.shard_size, &shards));
  }
  p->shards = std::move(shards);
  const size_t n = p->shards.size();
  p->total_bytes = 0;
  std::vector<std::byte> head;
  for (size_t k = 0; k < n; ++k) {
    GenShard& s = p->shards[k];
    s.path = ShardPath(opts.out_path, opts.format, k, n);
    const std::vector<WlfTensorSpec> tensors = ShardTensors(*p, s);
    LB_RETURN_IF_ERROR(encoder.EncodeHead(*p, {&tensors, 0, k, 0}, &s.layout, &head));
    p->total_bytes += s.layout.file_size;
  }
  if (!encoder.indexed()) {
    p->model_path = p->shards[0].path;
    return Status::Ok();
  }
  p->index_path = IndexPath(opts.out_path);
  p->model_path = p->index_path;
  p->index_bytes = ShardIndexText(PlanIndexJson(*p, 0)).size();
  p->total_bytes += p->index_bytes;
  return Status::Ok();
}

std::vector<WlfTensorSpec> ShardTensors(const GenPlan& plan, const GenShard& s) {
  const auto begin = plan.model.tensors.begin() + static_cast<ptrdiff_t>(s.first_tensor);
  return {begin, begin + static_cast<ptrdiff_t>(s.tensor_count)};
}

nlohmann::json PlanIndexJson(const GenPlan& plan, uint64_t model_checksum) {
  std::vector<std::string> names;
  names.reserve(plan.model.tensors.size());
  for (const WlfTensorSpec& t : plan.model.tensors) names.push_back(t.name);
  return ShardIndexJson(names, plan.shards, plan.model.tensor_bytes, model_checksum, plan.spec_id);
}

}  // namespace loadbench
