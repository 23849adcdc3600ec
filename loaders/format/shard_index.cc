// The index form of a sharded model: a JSON file whose `weight_map` names each tensor's shard
// (Hugging Face's model.safetensors.index.json; loadbench's NAME.wlf.index.json). Every name
// it gives is checked to stay inside the index's folder before anything is opened by it.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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

using Json = nlohmann::json;  // std::map objects: an ordered_json object's lookups are linear
using OJson = nlohmann::ordered_json;

constexpr const char* kIndexChecksumKey = "loadbench.xxh3_64";

// A JSON value for an error message: on one line (dump escapes control characters), and cut
// short when long.
std::string Shown(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 64) s = JsonSafe(s.substr(0, 64)) + "...";
  return s;
}

class IndexReader {
 public:
  explicit IndexReader(const std::string& path) : path_(path) {
    folder_ = std::filesystem::path(path).parent_path().string();
  }

  Status Read(const std::string& text, TensorTable* out);

 private:
  Status Bad(const std::string& what) const {
    return Status::BadInput(fmt::format("{}: {}", path_, what));
  }
  Status Parse(const std::string& text, Json* doc) const;
  Status Schema(const Json& doc);
  // The path of shard `name` (as the index names it), refused unless it is inside the folder.
  Status ShardPath(const std::string& name, const std::string& real_folder, std::string* out) const;
  // Every shard's path: beside a local index, or under a remote index's prefix.
  Status ShardPaths(const std::vector<std::string>& files, std::vector<std::string>* out) const;
  Status CheckTensors(const TensorTable& m, const std::vector<std::string>& files) const;
  Status CheckMetadata(const TensorTable& m, std::optional<uint64_t>* checksum) const;

  const std::string& path_;
  std::string folder_;  // "" for an index in the working folder
  Json metadata_ = Json::object();
  std::unordered_map<std::string, std::string> map_;  // tensor name to shard file name
  std::vector<std::string> weight_order_;             // weight_map's keys, sorted
};

Status IndexReader::Parse(const std::string& text, Json* doc) const {
  // A key twice in one object makes the index ambiguous (which shard holds the tensor?):
  // refused rather than settled by whichever the parser keeps.
  std::vector<std::unordered_set<std::string>> keys;
  std::string twice;
  const Json::parser_callback_t cb = [&](int, Json::parse_event_t ev, Json& parsed) {
    switch (ev) {
      case Json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
            twice.empty()) {
          twice = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    *doc = Json::parse(text, cb);
  } catch (const Json::parse_error& e) {
    return Bad(fmt::format("an index (it starts with '{{') that is not valid JSON: syntax error "
                           "at byte {}",
                           e.byte));
  }
  if (!twice.empty()) {
    return Bad(fmt::format("key '{}' appears twice in one object of the index", Printable(twice)));
  }
  return Status::Ok();
}

Status IndexReader::Schema(const Json& doc) {
  if (!doc.is_object()) return Bad("an index must be a JSON object");
  const auto wm = doc.find("weight_map");
  if (wm == doc.end()) return Bad("an index without \"weight_map\"");
  if (!wm->is_object()) {
    return Bad(fmt::format("\"weight_map\" is a JSON {}, not an object of tensor names to files",
                           wm->type_name()));
  }
  if (wm->empty()) return Bad("\"weight_map\" is empty: the index names no tensor");
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string()) {
      return Bad(fmt::format("\"weight_map\" maps tensor '{}' to a JSON {}, not a file name",
                             Printable(it.key()), it.value().type_name()));
    }
    map_.emplace(it.key(), it.value().get<std::string>());
    weight_order_.push_back(it.key());
  }
  const auto md = doc.find("metadata");
  if (md != doc.end() && !md->is_null()) {
    if (!md->is_object()) {
      return Bad(fmt::format("\"metadata\" is a JSON {}, not an object", md->type_name()));
    }
    metadata_ = *md;
  }
  return Status::Ok();
}

Status IndexReader::ShardPath(const std::string& name, const std::string& real_folder,
                              std::string* out) const {
  const auto outside = [&](std::string_view why) {
    return Bad(fmt::format("weight_map names '{}', outside the index's folder ({})",
                           Printable(name), why));
  };
  if (name.empty()) return Bad("weight_map names an empty file name");
  if (name.find('\0') != std::string::npos) {
    return Bad(fmt::format("weight_map names '{}', which holds a NUL byte", Printable(name)));
  }
  if (name.front() == '/') return outside("an absolute path");
  for (const auto& part : std::filesystem::path(name)) {
    if (part == "..") return outside("a '..' component");
  }
  *out = folder_.empty() ? name : (std::filesystem::path(folder_) / name).string();
  std::string real;
  int err = 0;
  if (!RealPath(*out, &real, &err)) {
    if (err == ENOENT) {
      return Status::BadInput(fmt::format("{}: missing: a shard the index {} names", *out, path_));
    }
    return Status::FromErrno(*out, err);
  }
  if (const std::string why = OutsideFolder(real, real_folder); !why.empty()) return outside(why);
  return Status::Ok();
}

Status IndexReader::ShardPaths(const std::vector<std::string>& files,
                               std::vector<std::string>* out) const {
  if (IsRemote(path_)) {
    for (size_t k = 0; k < files.size(); ++k) {
      LB_RETURN_IF_ERROR(RemoteSibling(path_, files[k], &(*out)[k]));
    }
    return Status::Ok();
  }
  std::string real_folder;
  int err = 0;
  const std::string folder = folder_.empty() ? "." : folder_;
  if (!RealPath(folder, &real_folder, &err)) return Status::FromErrno(folder, err);
  for (size_t k = 0; k < files.size(); ++k) {
    LB_RETURN_IF_ERROR(ShardPath(files[k], real_folder, &(*out)[k]));
  }
  return Status::Ok();
}

Status IndexReader::CheckTensors(const TensorTable& m,
                                 const std::vector<std::string>& files) const {
  // Each tensor in one shard only.
  std::unordered_map<std::string_view, uint32_t> held;  // tensor name to the shard holding it
  held.reserve(m.tensors.size());
  for (const TensorInfo& t : m.tensors) {
    const auto [it, fresh] = held.emplace(t.name, t.shard);
    if (!fresh) {
      return Status::BadInput(fmt::format("{}: tensor '{}' is also in {}: a tensor in two shards",
                                          m.shards[t.shard].path, Printable(t.name),
                                          m.shards[it->second].path));
    }
  }
  // Each in the shard the index names.
  for (const TensorInfo& t : m.tensors) {
    const auto it = map_.find(t.name);
    if (it == map_.end()) {
      return Status::BadInput(fmt::format("{}: holds tensor '{}', which the index {} does not list",
                                          m.shards[t.shard].path, Printable(t.name), path_));
    }
    if (it->second != files[t.shard]) {
      return Status::BadInput(
          fmt::format("{}: holds tensor '{}', which the index {} places in '{}'",
                      m.shards[t.shard].path, Printable(t.name), path_, Printable(it->second)));
    }
  }
  // Each the index lists in a shard.
  for (const std::string& name : weight_order_) {
    if (held.contains(name)) continue;
    const std::string& file = map_.at(name);
    const size_t k =
        static_cast<size_t>(std::lower_bound(files.begin(), files.end(), file) - files.begin());
    return Status::BadInput(fmt::format("{}: lacks tensor '{}', which the index {} places in it",
                                        m.shards[k].path, Printable(name), path_));
  }
  return Status::Ok();
}

Status IndexReader::CheckMetadata(const TensorTable& m, std::optional<uint64_t>* checksum) const {
  if (const auto ts = metadata_.find("total_size"); ts != metadata_.end()) {
    bool equal;
    if (ts->is_number_unsigned()) {
      equal = ts->get<uint64_t>() == m.tensor_bytes;
    } else if (ts->is_number_integer()) {
      equal = false;  // negative
    } else if (ts->is_number_float()) {
      const double d = ts->get<double>();
      equal = std::trunc(d) == d && d == static_cast<double>(m.tensor_bytes) &&
              static_cast<uint64_t>(d) == m.tensor_bytes;
    } else {
      return Bad(fmt::format("metadata.total_size is {}, not a number", Shown(*ts)));
    }
    if (!equal) {
      return Bad(fmt::format("metadata.total_size says {} bytes, but the {} shards' {} tensors "
                             "hold {}",
                             ts->dump(), m.shards.size(), m.tensors.size(), m.tensor_bytes));
    }
  }
  if (const auto cs = metadata_.find(kIndexChecksumKey); cs != metadata_.end()) {
    uint64_t v = 0;
    if (!cs->is_string() || !ParseHex64(cs->get<std::string>(), &v)) {
      return Bad(fmt::format("metadata[\"{}\"] is {}, not a string of 16 lower-case hex digits",
                             kIndexChecksumKey, Shown(*cs)));
    }
    *checksum = v;
  }
  return Status::Ok();
}

Status IndexReader::Read(const std::string& text, TensorTable* out) {
  Json doc;
  LB_RETURN_IF_ERROR(Parse(text, &doc));
  LB_RETURN_IF_ERROR(Schema(doc));
  std::sort(weight_order_.begin(), weight_order_.end());

  // The shards: the files weight_map names, in file-name order (model-00001-of-00004 first).
  std::set<std::string> names;
  for (const auto& [tensor, file] : map_) names.insert(file);
  const std::vector<std::string> files(names.begin(), names.end());
  std::vector<std::string> paths(files.size());
  LB_RETURN_IF_ERROR(ShardPaths(files, &paths));
  std::vector<TensorTable> shards(files.size());
  for (size_t k = 0; k < files.size(); ++k) {
    LB_RETURN_IF_ERROR(ReadTensorTableFromPath(paths[k], &shards[k]));
  }

  TensorTable m;
  LB_RETURN_IF_ERROR(JoinShards(shards, &m));
  LB_RETURN_IF_ERROR(CheckTensors(m, files));
  std::optional<uint64_t> checksum;
  LB_RETURN_IF_ERROR(CheckMetadata(m, &checksum));
  if (m.shards.size() == 1 && checksum && m.expected_checksum &&
      *checksum != *m.expected_checksum) {
    return Bad(fmt::format("metadata[\"{}\"] is {:016x}, but its one shard {} stores {:016x}",
                           kIndexChecksumKey, *checksum, m.shards[0].path, *m.expected_checksum));
  }
  if (checksum || m.shards.size() > 1) m.expected_checksum = checksum;
  m.layout = "index";
  OJson header = OJson::object();
  header["index"] = JsonSafe(path_);
  header["index_metadata"] =
      OJson::parse(metadata_.dump(-1, ' ', false, Json::error_handler_t::replace));
  header["shard_header"] = std::move(m.header);
  m.header = std::move(header);
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace

Status ReadShardIndex(const std::string& path, const std::string& text, TensorTable* out) {
  return IndexReader(path).Read(text, out);
}

}  // namespace loadbench
