#include "harness/gen/shards.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

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

}  // namespace loadbench
