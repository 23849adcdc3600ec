// `loadbench inspect`: validate a weight file and print its header and tensor table.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/cli/command.h"
#include "loaders/base/units.h"
#include "loaders/format/format.h"

namespace loadbench::cli {
namespace {

using Json = nlohmann::ordered_json;

class Inspect final : public Command {
 public:
  CLI::App* Add(CLI::App& app) override {
    auto* cmd =
        app.add_subcommand("inspect", "Validate a weight file (WLF, safetensors or GGUF, told "
                                      "apart by content) and print its header and tensor table");
    cmd->add_option("file", file_, "Weight file")->required();
    cmd->add_flag("--json", json_, "Print JSON");
    return cmd;
  }

  int Run(const std::string&) override {
    TensorTable t;
    if (Status s = ReadTensorTableFromPath(file_, &t); !s.ok()) return ReportError("inspect", s);
    if (json_) {
      PrintJson(t);
    } else {
      PrintText(t);
    }
    return 0;
  }

 private:
  void PrintJson(const TensorTable& t) const {
    Json j;
    j["file"] = file_;
    j["format"] = t.format;
    j["file_bytes"] = t.file_size;
    j["data_offset"] = t.data_offset;
    j["tensor_bytes"] = t.tensor_bytes;
    j["header"] = t.header;
    j["tensors"] = Json::array();
    for (const auto& x : t.tensors) {
      j["tensors"].push_back(Json{{"name", x.name},
                                  {"dtype", x.dtype},
                                  {"shape", x.shape},
                                  {"offset", x.offset},
                                  {"size", x.size}});
    }
    fmt::print("{}\n", j.dump(2, ' ', false, Json::error_handler_t::replace));
  }

  void PrintText(const TensorTable& t) const {
    fmt::print("file: {}\nformat: {}\nsize: {} ({} bytes)\n", file_, t.format,
               FormatBytes(t.file_size), t.file_size);
    for (const auto& [k, v] : t.header.items()) {
      fmt::print("  {}: {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    fmt::print("tensors: {}, {} in all\n", t.tensors.size(), FormatBytes(t.tensor_bytes));
    size_t width = 4;
    for (const auto& x : t.tensors) width = std::max(width, x.name.size());
    fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}\n", "#", "name", width, "dtype",
               "shape", "offset", "bytes");
    for (size_t i = 0; i < t.tensors.size(); ++i) {
      const auto& x = t.tensors[i];
      std::string shape = "[";
      for (size_t d = 0; d < x.shape.size(); ++d) {
        shape += (d ? ", " : "") + std::to_string(x.shape[d]);
      }
      shape += "]";
      fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}\n", i, x.name, width, x.dtype, shape,
                 x.offset, x.size);
    }
  }

  std::string file_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> InspectCommand() { return std::make_unique<Inspect>(); }

}  // namespace loadbench::cli
