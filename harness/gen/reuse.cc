#include "harness/gen/reuse.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>

#include <nlohmann/json.hpp>

#include "harness/gen/shards.h"
#include "loaders/format/format.h"

namespace loadbench {
namespace {

// A header field of `inspect`'s JSON as a number: `flags` is a number, `gen_spec_id` a hex
// string (null when the file has none).
bool JsonU64(const nlohmann::ordered_json& j, const char* key, uint64_t* out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  if (it->is_number_unsigned()) {
    *out = it->get<uint64_t>();
    return true;
  }
  if (!it->is_string()) return false;
  const std::string text = it->get<std::string>();
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(text.c_str(), &end, 16);
  return errno == 0 && !text.empty() && *end == '\0';
}

// True when `path` is a complete file that this generator wrote with `spec_id`, of
// `file_size` bytes and `tensor_count` tensors; *t is then its table. A file that cannot be
// read is simply not reused.
bool GeneratedFile(const std::string& path, uint64_t spec_id, uint64_t file_size,
                   size_t tensor_count, TensorTable* t) {
  uint64_t id = 0;
  return ReadTensorTableFromPath(path, t).ok() && JsonU64(t->header, "gen_spec_id", &id) &&
         id == spec_id && t->expected_checksum.has_value() && t->file_size == file_size &&
         t->tensors.size() == tensor_count;
}

// The model's checksum from the index of a sharded plan, when the index is exactly the one
// the plan writes with it.
std::optional<uint64_t> IndexedChecksum(const GenPlan& plan) {
  std::ifstream in(plan.index_path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  uint64_t v = 0;
  if (!in || j.is_discarded() || !j.is_object() || !j.contains("metadata") ||
      !JsonU64(j["metadata"], "loadbench.xxh3_64", &v)) {
    return std::nullopt;
  }
  if (nlohmann::json::parse(text, nullptr, false) != PlanIndexJson(plan, v)) return std::nullopt;
  return v;
}

}  // namespace

bool ReuseExisting(const std::string& out, const GenPlan& plan, GenResult* r) {
  TensorTable t;
  if (!GeneratedFile(out, plan.spec_id, plan.layout.file_size, plan.model.tensors.size(), &t)) {
    return false;
  }
  r->reused = true;
  r->file_bytes = t.file_size;
  r->tensor_bytes = t.tensor_bytes;
  r->tensor_count = t.tensors.size();
  r->checksum = *t.expected_checksum;
  r->seconds = 0;
  return true;
}

bool ReuseSharded(const GenEncoder& encoder, const GenPlan& plan, GenResult* r) {
  std::optional<uint64_t> model_sum;
  for (size_t k = 0; k < plan.shards.size(); ++k) {
    const GenShard& s = plan.shards[k];
    TensorTable t;
    if (!GeneratedFile(s.path, plan.spec_id, s.layout.file_size, s.tensor_count, &t)) {
      return false;
    }
    if (k == 0 && !encoder.indexed()) {
      uint64_t v = 0;
      const auto meta = t.header.find("metadata");
      if (meta == t.header.end() || !JsonU64(*meta, encoder.model_checksum_key(), &v)) {
        return false;
      }
      model_sum = v;
    }
  }
  if (!plan.index_path.empty()) model_sum = IndexedChecksum(plan);
  if (!model_sum) return false;
  r->reused = true;
  r->file_bytes = plan.total_bytes;
  r->checksum = *model_sum;
  r->seconds = 0;
  return true;
}

}  // namespace loadbench
