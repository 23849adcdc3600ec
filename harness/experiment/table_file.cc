// [[file]]: a file to use as it is (path), or one to generate (preset, size, format, ...),
// cached by spec in the data folder.
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "harness/experiment/tables.h"
#include "harness/gen/shards.h"
#include "loaders/base/proc_fields.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

// "4GiB", or "1.25xRAM": a multiple of this machine's memory (MemTotal), rounded down to
// whole MiB, which then names the file ("30720MiB").
Status SizeOf(const std::string& text, uint64_t* bytes, std::string* name) {
  constexpr std::string_view kRam = "xRAM";
  if (!text.ends_with(kRam)) return ParseBytes(text, "size", bytes);
  const std::string factor_text = text.substr(0, text.size() - kRam.size());
  char* end = nullptr;
  const double factor = std::strtod(factor_text.c_str(), &end);
  if (factor_text.empty() || end != factor_text.c_str() + factor_text.size() ||
      !(factor > 0 && factor <= 64)) {
    return Status::BadInput(fmt::format(
        "size '{}': a multiple of memory is written like \"1.25xRAM\" (above 0, at most 64)",
        text));
  }
  const uint64_t ram = MeminfoBytes("MemTotal").value_or(0);
  if (ram == 0) return Status::BadInput("size: MemTotal is not readable in /proc/meminfo");
  *bytes = static_cast<uint64_t>(factor * static_cast<double>(ram)) / (1 << 20) * (1 << 20);
  *name = fmt::format("{}MiB", *bytes >> 20);
  return Status::Ok();
}

// "4GiB" stays "4GiB"; spaces and slashes cannot reach a file name.
std::string FormatSize(const std::string& size) {
  std::string out;
  for (char c : size) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.') out += c;
  }
  return out;
}

// The keys of a [[file]] table into `f`; `size` and `shard_size` as written, for the name of a
// generated file.
Status FileKeys(const TableReader& r, const toml::table& t, ExperimentFile* f, std::string* size,
                std::string* shard_size) {
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    int64_t v = 0;
    if (k == "path") {
      LB_RETURN_IF_ERROR(r.String(node, "path", &f->path));
    } else if (k == "preset") {
      LB_RETURN_IF_ERROR(r.String(node, "preset", &f->gen.preset));
    } else if (k == "size") {
      LB_RETURN_IF_ERROR(r.String(node, "size", size));
      Status s = SizeOf(*size, &f->gen.size_bytes, size);
      if (!s.ok()) return r.Bad(node, s.message());
    } else if (k == "format") {
      LB_RETURN_IF_ERROR(r.String(node, "format", &f->gen.format));
    } else if (k == "dtype") {
      LB_RETURN_IF_ERROR(r.String(node, "dtype", &f->gen.dtype));
    } else if (k == "endian") {
      LB_RETURN_IF_ERROR(r.String(node, "endian", &f->gen.endian));
    } else if (k == "misalign") {
      LB_RETURN_IF_ERROR(r.Integer(node, "misalign", 0, 63, &v));
      f->gen.misalign = static_cast<uint64_t>(v);
    } else if (k == "shards") {
      LB_RETURN_IF_ERROR(r.Integer(node, "shards", 1, static_cast<int64_t>(kMaxShards), &v));
      f->gen.shards = static_cast<uint64_t>(v);
    } else if (k == "shard_size") {
      LB_RETURN_IF_ERROR(r.Bytes(node, "shard_size", /*none_ok=*/false, &f->gen.shard_size));
      *shard_size = node.is_integer() ? std::to_string(f->gen.shard_size)
                                      : FormatSize(*node.value<std::string>());
    } else if (k == "align" || k == "seed") {
      LB_RETURN_IF_ERROR(r.Integer(node, k.c_str(), 0, INT64_MAX, &v));
      (k == "align" ? f->gen.align : f->gen.seed) = static_cast<uint64_t>(v);
    } else {
      return r.Bad(node, fmt::format("[[file]]: unknown key '{}'", k));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ReadFile(const TableReader& r, const toml::table& t, std::vector<ExperimentFile>* out) {
  ExperimentFile f;
  std::string size, shard_size;  // as written, for the file's name
  LB_RETURN_IF_ERROR(FileKeys(r, t, &f, &size, &shard_size));
  if (!f.path.empty()) {
    if (!size.empty()) {
      return r.Bad(t, "[[file]] has both path (a file to use) and size (one to generate)");
    }
    out->push_back(std::move(f));
    return Status::Ok();
  }
  if (size.empty())
    return r.Bad(t, "[[file]] needs path (a file to use) or size (one to generate)");
  f.generate = true;
  // Named by spec, so that every experiment asking for the same file finds it; a sharded
  // model's shards and index are named after it (shards.h).
  const GenOptions& g = f.gen;
  f.gen.out_path =
      fmt::format("{}/{}-{}-{}-s{}{}{}{}{}{}.{}", r.source().data_dir, g.preset, FormatSize(size),
                  g.dtype, g.seed, g.align ? fmt::format("-a{}", g.align) : "",
                  g.endian == "big" ? "-be" : "",
                  g.misalign ? fmt::format("-mis{}", g.misalign) : "",
                  g.shards ? fmt::format("-shards{}", g.shards) : "",
                  g.shard_size ? fmt::format("-shard{}", shard_size) : "", g.format);
  GenPlan plan;
  Status s = PlanGenerated(f.gen, &plan);
  if (!s.ok()) return r.Bad(t, s.message());
  f.file_bytes = plan.total_bytes;
  f.path = plan.model_path;  // ModelPath(f.gen): the file, the index or the first split
  out->push_back(std::move(f));
  return Status::Ok();
}

}  // namespace loadbench
