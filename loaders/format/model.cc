#include "loaders/format/model.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loaders/base/file_io.h"
#include "loaders/base/text.h"
#include "loaders/format/format.h"
#include "loaders/format/model_forms.h"
#include "loaders/remote/source.h"

namespace loadbench {
namespace {

// An index larger than this is refused before it is read: Hugging Face's indexes of the largest
// models (a hundred thousand tensors) are a few MB.
constexpr uint64_t kMaxIndexBytes = 256ull << 20;
constexpr uint64_t kSniffBytes = 4096;  // read to tell an index from a weight file

bool IsBlank(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// JSON text: the first non-blank byte is '{', and the first bytes hold no NUL, which JSON text
// never does and a weight file's binary header always does (safetensors' 8-byte header length
// is at most 100 MiB, so its high bytes are zero; WLF and GGUF have their magic at byte 0).
bool LooksLikeIndex(const unsigned char* head, size_t len) {
  size_t i = 0;
  while (i < len && IsBlank(head[i])) ++i;
  if (i == len || head[i] != '{') return false;
  const size_t n = std::min<size_t>(len, 16);
  return std::find(head, head + n, 0) == head + n;
}

Status ReadIndexText(const ByteSource& src, TensorTable* out) {
  const std::string& path = src.name();
  const uint64_t size = src.size();
  if (size > kMaxIndexBytes) {
    return Status::BadInput(fmt::format("{}: an index of {} bytes; indexes are limited to {}", path,
                                        size, kMaxIndexBytes));
  }
  std::string text(static_cast<size_t>(size), '\0');
  LB_RETURN_IF_ERROR(src.ReadAt(text.data(), text.size(), 0));
  return ReadShardIndex(path, text, out);
}

Status ReadFile(const std::string& path, TensorTable* out) {
  std::unique_ptr<ByteSource> src;
  LB_RETURN_IF_ERROR(OpenSource(path, &src));
  unsigned char head[kSniffBytes];
  const size_t len = static_cast<size_t>(std::min(src->size(), kSniffBytes));
  if (len > 0) LB_RETURN_IF_ERROR(src->ReadAt(head, len, 0));
  if (LooksLikeIndex(head, len)) return ReadIndexText(*src, out);
  TensorTable t;
  LB_RETURN_IF_ERROR(ReadTensorTable(*src, &t));
  if (IsGgufSplit(t)) return ReadGgufSplit(path, std::move(t), out);
  *out = std::move(t);
  return Status::Ok();
}

// A folder: the one index in it.
Status ReadFolder(const std::string& dir, TensorTable* out) {
  std::error_code ec;
  std::vector<std::string> found;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (name.ends_with(".index.json") && it->is_regular_file(type_ec)) found.push_back(name);
  }
  if (ec) {
    return Status::BadInput(fmt::format("{}: cannot list the folder: {}", dir, ec.message()));
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    return Status::BadInput(fmt::format(
        "{}: a folder, holding no *.index.json file; give a weight file, an index, or a folder "
        "holding one index",
        dir));
  }
  if (found.size() > 1) {
    std::vector<std::string> shown;
    for (const std::string& f : found) shown.push_back(Printable(f));
    return Status::BadInput(
        fmt::format("{}: a folder holding {} *.index.json files ({}); give the index to read", dir,
                    found.size(), fmt::join(shown, ", ")));
  }
  const std::string path = (std::filesystem::path(dir) / found[0]).string();
  std::unique_ptr<ByteSource> src;
  LB_RETURN_IF_ERROR(OpenSource(path, &src));
  return ReadIndexText(*src, out);
}

}  // namespace

Status ReadModel(const std::string& path, TensorTable* out) {
  struct stat st;
  if (!IsRemote(path) && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return ReadFolder(path, out);
  return ReadFile(path, out);  // OpenReadOnly names a missing or odd path
}

Status JoinShards(const std::vector<TensorTable>& shards, TensorTable* out) {
  TensorTable m;
  for (size_t k = 0; k < shards.size(); ++k) {
    const TensorTable& s = shards[k];
    if (s.shards.size() != 1) {
      return Status::BadInput(
          fmt::format("{}: not a single weight file", s.shards.empty() ? "?" : s.shards[0].path));
    }
    if (k == 0) {
      m.format = s.format;
      m.big_endian = s.big_endian;
      m.data_offset = s.data_offset;
      m.header = s.header;
    } else if (s.format != m.format || s.big_endian != m.big_endian) {
      return Status::BadInput(
          fmt::format("{}: a {}{} file among shards that are {}{} ({})", s.shards[0].path, s.format,
                      s.big_endian ? " big-endian" : "", m.format,
                      m.big_endian ? " big-endian" : "", shards[0].shards[0].path));
    }
    ShardInfo info = s.shards[0];
    info.first_tensor = m.tensors.size();
    for (TensorInfo t : s.tensors) {
      t.shard = static_cast<uint32_t>(k);
      m.tensors.push_back(std::move(t));
    }
    m.file_size += s.file_size;
    m.tensor_bytes += s.tensor_bytes;
    m.shards.push_back(std::move(info));
  }
  m.layout = shards.size() > 1 ? "index" : "file";
  if (shards.size() == 1) m.expected_checksum = shards[0].expected_checksum;
  *out = std::move(m);
  return Status::Ok();
}

TensorTable ShardTable(const TensorTable& model, size_t k) {
  const ShardInfo& s = model.shards.at(k);
  TensorTable t;
  t.format = model.format;
  t.file_size = s.file_size;
  t.data_offset = s.data_offset;
  t.tensor_bytes = s.tensor_bytes;
  t.expected_checksum = s.expected_checksum;
  t.big_endian = model.big_endian;
  t.tensors.assign(model.tensors.begin() + static_cast<ptrdiff_t>(s.first_tensor),
                   model.tensors.begin() + static_cast<ptrdiff_t>(s.first_tensor + s.tensor_count));
  for (TensorInfo& ti : t.tensors) ti.shard = 0;
  t.shards = {s};
  t.shards[0].first_tensor = 0;
  return t;
}

std::vector<ShardInfo> ShardsOf(const std::string& path, const TensorTable& table) {
  if (table.sharded()) return table.shards;
  ShardInfo one = table.shards.empty() ? ShardInfo{} : table.shards[0];
  one.path = path;
  one.file_size = table.file_size;
  one.first_tensor = 0;
  one.tensor_count = table.tensors.size();
  return {one};
}

std::string ShardFileName(const std::string& name, size_t k, size_t n, const std::string& ext) {
  return fmt::format("{}-{:05d}-of-{:05d}.{}", name, k + 1, n, ext);
}

}  // namespace loadbench
