// `loadbench inspect`: validate a weight file or sharded model and print its header, its
// shards and its tensor table (each tensor with its shard).
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/cli/commands.h"
#include "loaders/base/units.h"
#include "loaders/format/model.h"

namespace loadbench::cli {
namespace {

using Json = nlohmann::ordered_json;

void PrintJson(const std::string& file, const TensorTable& t) {
  Json j;
  j["file"] = file;
  j["format"] = t.format;
  j["file_bytes"] = t.file_size;
  j["data_offset"] = t.data_offset;
  j["tensor_bytes"] = t.tensor_bytes;
  j["layout"] = t.layout;
  j["shards"] = Json::array();
  for (const auto& s : t.shards) {
    j["shards"].push_back(Json{{"file", s.path},
                               {"file_bytes", s.file_size},
                               {"tensor_count", s.tensor_count},
                               {"tensor_bytes", s.tensor_bytes}});
  }
  j["header"] = t.header;
  j["tensors"] = Json::array();
  for (const auto& x : t.tensors) {
    j["tensors"].push_back(Json{{"name", x.name},
                                {"dtype", x.dtype},
                                {"shape", x.shape},
                                {"offset", x.offset},
                                {"size", x.size},
                                {"shard", x.shard}});
  }
  fmt::print("{}\n", j.dump(2, ' ', false, Json::error_handler_t::replace));
}

void PrintText(const std::string& file, const TensorTable& t) {
  fmt::print("file: {}\nformat: {}\nsize: {} ({} bytes)\n", file, t.format,
             FormatBytes(t.file_size), t.file_size);
  for (const auto& [k, v] : t.header.items()) {
    fmt::print("  {}: {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  if (t.sharded()) {
    fmt::print("shards: {} ({})\n", t.shards.size(), t.layout);
    for (size_t k = 0; k < t.shards.size(); ++k) {
      const ShardInfo& s = t.shards[k];
      fmt::print("  {:>4}  {}  {} tensors, {} ({} bytes)\n", k, s.path, s.tensor_count,
                 FormatBytes(s.file_size), s.file_size);
    }
  }
  fmt::print("tensors: {}, {} in all\n", t.tensors.size(), FormatBytes(t.tensor_bytes));
  size_t width = 4;
  for (const auto& x : t.tensors) width = std::max(width, x.name.size());
  const bool sharded = t.sharded();
  fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}{}\n", "#", "name", width, "dtype", "shape",
             "offset", "bytes", sharded ? "  shard" : "");
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const auto& x = t.tensors[i];
    std::string shape = "[";
    for (size_t d = 0; d < x.shape.size(); ++d) {
      shape += (d ? ", " : "") + std::to_string(x.shape[d]);
    }
    shape += "]";
    fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}{}\n", i, x.name, width, x.dtype, shape,
               x.offset, x.size, sharded ? fmt::format("  {:>5}", x.shard) : "");
  }
}

}  // namespace

int InspectCommand(const InspectFlags& f) {
  TensorTable t;
  if (Status s = ReadModel(f.file, &t); !s.ok()) return ReportError("inspect", s);
  if (f.json) {
    PrintJson(f.file, t);
  } else {
    PrintText(f.file, t);
  }
  return 0;
}

}  // namespace loadbench::cli
