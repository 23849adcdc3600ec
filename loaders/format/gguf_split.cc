// The GGUF split form of a sharded model, as llama.cpp's gguf-split writes it:
// NAME-00001-of-0000N.gguf and its siblings beside it, each carrying split.no (0-based),
// split.count and split.tensors.count (the model's tensor count); the first holds the model's
// other metadata. Each sibling is checked to stay inside the first's folder before it is opened,
// as an index's shards are.
#include <filesystem>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loaders/base/text.h"
#include "loaders/format/format.h"
#include "loaders/format/model.h"
#include "loaders/format/model_forms.h"
#include "loaders/remote/url.h"

namespace loadbench {
namespace {

using OJson = nlohmann::ordered_json;

// A header's split field as a non-negative integer (ReadGguf keeps each as its integer type).
std::optional<uint64_t> Field(const TensorTable& t, const char* field) {
  const auto split = t.header.find("split");
  if (split == t.header.end() || !split->is_object()) return std::nullopt;
  const auto v = split->find(field);
  if (v == split->end()) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer() && v->get<int64_t>() >= 0) {
    return static_cast<uint64_t>(v->get<int64_t>());
  }
  return std::nullopt;
}

std::string Shown(const TensorTable& t, const char* field) {
  const auto split = t.header.find("split");
  if (split == t.header.end() || !split->contains(field) || (*split)[field].is_null()) {
    return "missing";
  }
  return (*split)[field].dump();
}

// "-00002-of-00003.gguf": the end of the name of split `k` (0-based) of `n`.
std::string Suffix(uint64_t k, uint64_t n) {
  return fmt::format("-{:05d}-of-{:05d}.gguf", k + 1, n);
}

}  // namespace

bool IsGgufSplit(const TensorTable& t) {
  const std::optional<uint64_t> n = Field(t, "count");
  return t.format == "gguf" && n && *n > 1;
}

namespace {

Status Bad(const std::string& file, const std::string& what) {
  return Status::BadInput(fmt::format("{}: {}", file, what));
}

// The first split's own claims: it is split 1 of `n`, named NAME-00001-of-0000N.gguf (*name),
// and says how many tensors the model has (*total).
Status CheckFirst(const std::string& path, const TensorTable& first, uint64_t n, std::string* name,
                  uint64_t* total) {
  const std::string base = std::filesystem::path(path).filename().string();
  const std::optional<uint64_t> no = Field(first, "no");
  if (!no) {
    return Bad(path, fmt::format("a GGUF split of {} with split.no {}", n, Shown(first, "no")));
  }
  if (*no != 0) {
    std::string hint;
    const std::string own = Suffix(*no, n);
    if (base.size() > own.size() && base.ends_with(own)) {
      hint =
          fmt::format(" ({})", Printable(base.substr(0, base.size() - own.size()) + Suffix(0, n)));
    }
    return Bad(path, fmt::format("is split {} of {}; give the first{}", *no + 1, n, hint));
  }
  const std::string suffix = Suffix(0, n);
  if (base.size() <= suffix.size() || !base.ends_with(suffix)) {
    return Bad(path, fmt::format("the first of a GGUF split of {} must be named NAME{}, so that "
                                 "its siblings can be found beside it",
                                 n, suffix));
  }
  const std::optional<uint64_t> t = Field(first, "tensors_count");
  if (!t) {
    return Bad(path, fmt::format("a GGUF split of {} with split.tensors.count {}", n,
                                 Shown(first, "tensors_count")));
  }
  *name = base.substr(0, base.size() - suffix.size());
  *total = *t;
  return Status::Ok();
}

// Split `k` (0-based) of `n` at `sp` is there, and inside the folder of the first split at
// `path` (whose real path is `real_folder`), as an index's shards must be inside the index's.
Status FindSibling(const std::string& sp, uint64_t k, uint64_t n, const std::string& path,
                   const std::string& real_folder) {
  std::error_code ec;
  if (!std::filesystem::exists(sp, ec)) {
    return Bad(sp, fmt::format("missing: split {} of {} of {}", k + 1, n, path));
  }
  std::string real;
  int err = 0;
  if (!RealPath(sp, &real, &err)) return Status::FromErrno(sp, err);
  if (const std::string why = OutsideFolder(real, real_folder); !why.empty()) {
    return Bad(sp,
               fmt::format("split {} of {} of {} is outside its folder ({})", k + 1, n, path, why));
  }
  return Status::Ok();
}

// Split `k` (0-based) of `n` at `sp`, read and checked against the first split at `path`.
Status ReadSibling(const std::string& sp, uint64_t k, uint64_t n, const std::string& path,
                   uint64_t total, TensorTable* out) {
  TensorTable t;
  LB_RETURN_IF_ERROR(ReadTensorTableFromPath(sp, &t));
  if (t.format != "gguf") {
    return Bad(sp, fmt::format("a {} file, not split {} of {} of {}", t.format, k + 1, n, path));
  }
  if (Field(t, "count") != n) {
    return Bad(sp, fmt::format("split.count is {}, but the first split {} says {}",
                               Shown(t, "count"), path, n));
  }
  if (Field(t, "no") != k) {
    return Bad(sp, fmt::format("split.no is {}, but its name makes it split.no {} (split {} "
                               "of {})",
                               Shown(t, "no"), k, k + 1, n));
  }
  if (Field(t, "tensors_count") != total) {
    return Bad(sp, fmt::format("split.tensors.count is {}, but the first split {} says {}",
                               Shown(t, "tensors_count"), path, total));
  }
  *out = std::move(t);
  return Status::Ok();
}

// The model of the checked splits: no tensor in two of them, the model checksum from the first.
Status Assemble(const std::string& path, const std::vector<TensorTable>& splits, TensorTable* out) {
  TensorTable m;
  LB_RETURN_IF_ERROR(JoinShards(splits, &m));
  std::unordered_map<std::string_view, uint32_t> held;  // tensor name to the split holding it
  for (const TensorInfo& t : m.tensors) {
    const auto [it, fresh] = held.emplace(t.name, t.shard);
    if (!fresh) {
      return Bad(m.shards[t.shard].path,
                 fmt::format("tensor '{}' is also in {}: a tensor in two splits", Printable(t.name),
                             m.shards[it->second].path));
    }
  }
  m.layout = "gguf-split";
  m.expected_checksum.reset();
  const OJson& h = splits[0].header;
  if (const auto c = h.find("model_checksum"); c != h.end() && c->is_string()) {
    uint64_t v = 0;
    if (ParseHex64(c->get<std::string>(), &v)) m.expected_checksum = v;
  }
  OJson header = OJson::object();
  header["first_split"] = JsonSafe(path);
  header["split_count"] = splits.size();
  header["shard_header"] = std::move(m.header);
  m.header = std::move(header);
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace

Status ReadGgufSplit(const std::string& path, TensorTable first, TensorTable* out) {
  const uint64_t n = *Field(first, "count");
  std::string name;
  uint64_t total = 0;
  LB_RETURN_IF_ERROR(CheckFirst(path, first, n, &name, &total));
  const bool remote = IsRemote(path);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::string real_folder;
  int err = 0;
  const std::string folder = dir.empty() ? "." : dir.string();
  if (!remote && !RealPath(folder, &real_folder, &err)) return Status::FromErrno(folder, err);
  std::vector<TensorTable> splits;
  splits.push_back(std::move(first));
  uint64_t tensors = splits[0].tensors.size();
  for (uint64_t k = 1; k < n; ++k) {
    std::string sp;
    TensorTable t;
    if (remote) {  // a missing split is a 404 when it is read
      LB_RETURN_IF_ERROR(RemoteSibling(path, ShardFileName(name, k, n, "gguf"), &sp));
    } else {
      sp = (dir / ShardFileName(name, k, n, "gguf")).string();
      LB_RETURN_IF_ERROR(FindSibling(sp, k, n, path, real_folder));
    }
    LB_RETURN_IF_ERROR(ReadSibling(sp, k, n, path, total, &t));
    tensors += t.tensors.size();
    splits.push_back(std::move(t));
  }
  if (tensors != total) {
    return Bad(path, fmt::format("split.tensors.count says {} tensors, but the {} splits hold {}",
                                 total, n, tensors));
  }
  return Assemble(path, splits, out);
}

}  // namespace loadbench
