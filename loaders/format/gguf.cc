// GGUF reading and writing. The header is read front to back through a window of the file, and
// every count and length is checked against the bytes left before anything is allocated or
// skipped for it: a claimed array of a trillion strings fails at once, not after an
// allocation of terabytes.
#include "loaders/format/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/base/text.h"

namespace loadbench {
namespace {

using OJson = nlohmann::ordered_json;

// ggml tensor types: elements per block and bytes per block. Codes without a name were removed
// from ggml (Q4_2, Q4_3, the Q4_0_x_y and IQ4_NL_x_y repackings) and no file may use them.
struct GgmlType {
  const char* name;
  uint64_t block;
  uint64_t bytes;
};
constexpr GgmlType kGgmlTypes[] = {
    {"f32", 1, 4},        {"f16", 1, 2},       {"q4_0", 32, 18},     {"q4_1", 32, 20},
    {nullptr, 0, 0},      {nullptr, 0, 0},     {"q5_0", 32, 22},     {"q5_1", 32, 24},
    {"q8_0", 32, 34},     {"q8_1", 32, 36},    {"q2_k", 256, 84},    {"q3_k", 256, 110},
    {"q4_k", 256, 144},   {"q5_k", 256, 176},  {"q6_k", 256, 210},   {"q8_k", 256, 292},
    {"iq2_xxs", 256, 66}, {"iq2_xs", 256, 74}, {"iq3_xxs", 256, 98}, {"iq1_s", 256, 50},
    {"iq4_nl", 32, 18},   {"iq3_s", 256, 110}, {"iq2_s", 256, 82},   {"iq4_xs", 256, 136},
    {"i8", 1, 1},         {"i16", 1, 2},       {"i32", 1, 4},        {"i64", 1, 8},
    {"f64", 1, 8},        {"iq1_m", 256, 56},  {"bf16", 1, 2},       {nullptr, 0, 0},
    {nullptr, 0, 0},      {nullptr, 0, 0},     {"tq1_0", 256, 54},   {"tq2_0", 256, 66},
    {nullptr, 0, 0},      {nullptr, 0, 0},     {nullptr, 0, 0},      {"mxfp4", 32, 17},
};
constexpr uint32_t kGgmlTypeCount = sizeof kGgmlTypes / sizeof kGgmlTypes[0];

// Metadata value types; size 0 for the two of variable size.
enum : uint32_t { kString = 8, kArray = 9, kUint32 = 4 };
struct ValueType {
  const char* name;
  uint64_t size;
};
constexpr ValueType kValueTypes[] = {
    {"u8", 1},   {"i8", 1},     {"u16", 2},   {"i16", 2}, {"u32", 4}, {"i32", 4}, {"f32", 4},
    {"bool", 1}, {"string", 0}, {"array", 0}, {"u64", 8}, {"i64", 8}, {"f64", 8},
};
constexpr uint32_t kValueTypeCount = sizeof kValueTypes / sizeof kValueTypes[0];

// What llama.cpp's gguf-split writes in every split (any integer type is accepted), shown in the
// header under "split"; and the model's checksum that loadbench writes in a split's first file.
constexpr const char* kSplitKeys[] = {"split.no", "split.count", "split.tensors.count"};
constexpr const char* kSplitFields[] = {"no", "count", "tensors_count"};
constexpr const char* kModelChecksumKey = "loadbench.model_xxh3_64";
bool IsIntegerType(uint32_t type) { return type <= 5 || type == 10 || type == 11; }

constexpr uint64_t kWindow = 1 << 20;        // bytes read from the file at a time
constexpr uint64_t kMaxKeyBytes = 64 << 10;  // keys and tensor names; real ones are short
constexpr uint64_t kShownStringBytes = 256;  // of a string value, in inspect's metadata
constexpr size_t kMaxShownKeys = 1024;       // keys listed in inspect's metadata

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

class Parser {
 public:
  explicit Parser(const ByteSource& src) : src_(src), path_(src.name()), size_(src.size()) {}

  Status Parse(TensorTable* out);

 private:
  struct Info {
    std::string name;
    std::vector<uint64_t> ne;  // innermost first, as stored
    uint32_t type = 0;
    uint64_t rel_offset = 0;
    uint64_t size = 0;
  };

  Status Bad(const std::string& what) const {
    return Status::BadInput(fmt::format("{}: invalid GGUF file: {}", path_, what));
  }

  // `what` names the field for an error message: a string, or a callable that makes one only
  // when there is an error (a tensor's name is made JSON-safe only then).
  template <typename What>
  static std::string Text(const What& what) {
    if constexpr (std::is_invocable_v<const What&>) {
      return what();
    } else {
      return std::string(what);
    }
  }
  template <typename What>
  Status PastEnd(uint64_t n, const What& what) const {
    return Bad(fmt::format("{} at offset {} needs {} bytes, but the file ends at {}", Text(what),
                           pos_, n, size_));
  }

  // Copies the next n bytes to dst (n is checked against the bytes left first).
  template <typename What>
  Status Read(void* dst, uint64_t n, const What& what) {
    if (n > size_ - pos_) return PastEnd(n, what);
    auto* out = static_cast<std::byte*>(dst);
    while (n > 0) {
      if (pos_ < win_begin_ || pos_ >= win_begin_ + win_.size()) {
        const uint64_t len = std::min(kWindow, size_ - pos_);
        win_.resize(len);
        LB_RETURN_IF_ERROR(src_.ReadAt(win_.data(), len, pos_));
        win_begin_ = pos_;
      }
      const uint64_t at = pos_ - win_begin_;
      const uint64_t k = std::min<uint64_t>(n, win_.size() - at);
      std::memcpy(out, win_.data() + at, k);
      out += k;
      pos_ += k;
      n -= k;
    }
    return Status::Ok();
  }
  template <typename What>
  Status Skip(uint64_t n, const What& what) {
    if (n > size_ - pos_) return PastEnd(n, what);
    pos_ += n;
    return Status::Ok();
  }
  template <typename T, typename What>
  Status Le(T* v, const What& what) {
    return Read(v, sizeof *v, what);
  }
  // A count, length or dim: 32 bits in version 1, 64 after.
  template <typename What>
  Status Count(uint64_t* v, const What& what) {
    if (version_ == 1) {
      uint32_t x;
      LB_RETURN_IF_ERROR(Le(&x, what));
      *v = x;
      return Status::Ok();
    }
    return Le(v, what);
  }
  // A string: the first `keep` bytes go to *out, the rest is skipped; *len gets the full length.
  template <typename What>
  Status Str(std::string* out, uint64_t keep, const What& what, uint64_t* len) {
    const uint64_t at = pos_;
    LB_RETURN_IF_ERROR(Count(len, what));
    if (*len > size_ - pos_) {
      return Bad(fmt::format("{} at offset {} has length {}, past the end of the file ({})",
                             Text(what), at, *len, size_));
    }
    const uint64_t k = std::min(*len, keep);
    out->resize(k);
    LB_RETURN_IF_ERROR(Read(out->data(), k, what));
    return Skip(*len - k, what);
  }

  Status KeyValue(uint64_t index);
  Status Value(uint32_t type, const std::string& key, OJson* shown);
  Status Array(const std::string& key, OJson* shown);
  Status TensorInfo(uint64_t index, Info* info);

  // Parse's phases, in file order.

  // Magic, version and the two counts, each count checked against the bytes left.
  Status Preamble(uint64_t* n_tensors, uint64_t* n_kv);
  // The tensor infos, each name once.
  Status TensorInfos(uint64_t n_tensors, std::vector<Info>* infos);
  // Each tensor aligned and inside the data section, appended to t's table in info order.
  Status PlaceTensors(const std::vector<Info>& infos, uint64_t data_offset, TensorTable* t) const;
  // No two tensors with bytes overlap (a table in info order need not be in data order).
  Status CheckOverlaps(const TensorTable& t, uint64_t data_offset) const;
  // The header as `inspect` shows it.
  void Describe(uint64_t n_tensors, uint64_t n_kv, uint64_t data_offset, TensorTable* t) const;

  const ByteSource& src_;
  const std::string& path_;
  const uint64_t size_;
  uint64_t pos_ = 0;
  std::vector<std::byte> win_;
  uint64_t win_begin_ = 0;

  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  std::optional<uint64_t> checksum_, gen_spec_, model_checksum_;
  OJson split_[3];  // split.no, split.count, split.tensors.count; null when absent
  std::unordered_set<std::string> keys_;
  OJson metadata_ = OJson::object();
  OJson duplicates_ = OJson::array();
  uint64_t across_blocks_ = 0;
};

Status Parser::Value(uint32_t type, const std::string& key, OJson* shown) {
  const auto what = [&] { return fmt::format("value of key '{}'", Printable(key)); };
  switch (type) {
    case kString: {
      std::string s;
      uint64_t len;
      LB_RETURN_IF_ERROR(Str(&s, kShownStringBytes, what, &len));
      *shown = len > s.size() ? fmt::format("{}... ({} bytes)", JsonSafe(s), len) : JsonSafe(s);
      return Status::Ok();
    }
    case kArray:
      return Array(key, shown);
    default:
      break;
  }
  if (type >= kValueTypeCount) {
    return Bad(fmt::format("key '{}' at offset {} has unknown value type {}", Printable(key),
                           pos_ - 4, type));
  }
  unsigned char b[8] = {};
  LB_RETURN_IF_ERROR(Read(b, kValueTypes[type].size, what));
  auto as = [&](auto v) {
    std::memcpy(&v, b, sizeof v);
    return v;
  };
  switch (type) {
    case 0:
      *shown = as(uint8_t{});
      break;
    case 1:
      *shown = as(int8_t{});
      break;
    case 2:
      *shown = as(uint16_t{});
      break;
    case 3:
      *shown = as(int16_t{});
      break;
    case 4:
      *shown = as(uint32_t{});
      break;
    case 5:
      *shown = as(int32_t{});
      break;
    case 6:
      *shown = as(float{});
      break;
    case 7:
      *shown = b[0] != 0;
      break;
    case 10:
      *shown = as(uint64_t{});
      break;
    case 11:
      *shown = as(int64_t{});
      break;
    case 12:
      *shown = as(double{});
      break;
  }
  return Status::Ok();
}

Status Parser::Array(const std::string& key, OJson* shown) {
  const auto what = [&] { return fmt::format("array of key '{}'", Printable(key)); };
  uint32_t type;
  uint64_t count;
  LB_RETURN_IF_ERROR(Le(&type, what));
  const uint64_t count_at = pos_;
  LB_RETURN_IF_ERROR(Count(&count, what));
  if (type == kArray) {
    return Bad(fmt::format("key '{}' is an array of arrays, which GGUF readers do not accept",
                           Printable(key)));
  }
  if (type >= kValueTypeCount) {
    return Bad(fmt::format("key '{}' is an array of unknown value type {}", Printable(key), type));
  }
  // Every element takes at least this many bytes (a string its length field), so a count the
  // rest of the file cannot hold is refused before a single element is read.
  const uint64_t min_size = type == kString ? (version_ == 1 ? 4 : 8) : kValueTypes[type].size;
  if (count > (size_ - pos_) / min_size) {
    return Bad(fmt::format("key '{}' claims {} {} elements at offset {}, more than the {} bytes "
                           "left can hold",
                           Printable(key), count, kValueTypes[type].name, count_at, size_ - pos_));
  }
  if (type == kString) {
    std::string ignored;
    uint64_t len;
    for (uint64_t i = 0; i < count; ++i) LB_RETURN_IF_ERROR(Str(&ignored, 0, what, &len));
  } else {
    LB_RETURN_IF_ERROR(Skip(count * min_size, what));
  }
  *shown = OJson{{"array_of", kValueTypes[type].name}, {"count", count}};
  return Status::Ok();
}

Status Parser::KeyValue(uint64_t index) {
  const uint64_t at = pos_;
  std::string key;
  uint64_t len;
  LB_RETURN_IF_ERROR(Str(
      &key, kMaxKeyBytes, [&] { return fmt::format("key {}", index); }, &len));
  if (len > kMaxKeyBytes) {
    return Bad(fmt::format("key {} at offset {} is {} bytes long; keys are limited to {}", index,
                           at, len, kMaxKeyBytes));
  }
  uint32_t type;
  LB_RETURN_IF_ERROR(Le(&type, [&] { return fmt::format("type of key '{}'", Printable(key)); }));
  const bool first = keys_.insert(key).second;
  if (first && key == "general.alignment") {
    if (type != kUint32) {
      return Bad(fmt::format("general.alignment has type {}; it must be u32",
                             type < kValueTypeCount ? kValueTypes[type].name : "unknown"));
    }
    uint32_t a;
    LB_RETURN_IF_ERROR(Le(&a, "general.alignment"));
    if (!IsPowerOfTwo(a)) {
      return Bad(fmt::format("general.alignment {} is not a power of two", a));
    }
    alignment_ = a;
    if (metadata_.size() < kMaxShownKeys) metadata_[key] = a;
    return Status::Ok();
  }
  OJson shown;
  LB_RETURN_IF_ERROR(Value(type, key, &shown));
  if (!first) {
    if (duplicates_.size() < kMaxShownKeys) duplicates_.push_back(JsonSafe(key));
    return Status::Ok();
  }
  if (key == kGgufChecksumKey || key == kGgufGenSpecKey || key == kModelChecksumKey) {
    uint64_t v = 0;
    if (type != kString || !ParseHex64(shown.get<std::string>(), &v)) {
      return Bad(fmt::format("key '{}' is {}, not a string of 16 lower-case hex digits", key,
                             shown.dump()));
    }
    (key == kGgufChecksumKey  ? checksum_
     : key == kGgufGenSpecKey ? gen_spec_
                              : model_checksum_) = v;
  }
  for (size_t i = 0; i < 3; ++i) {
    if (key != kSplitKeys[i]) continue;
    if (!IsIntegerType(type)) {
      return Bad(fmt::format("key '{}' has type {}; it must be an integer", key,
                             type < kValueTypeCount ? kValueTypes[type].name : "unknown"));
    }
    split_[i] = shown;
  }
  if (metadata_.size() < kMaxShownKeys) metadata_[JsonSafe(key)] = std::move(shown);
  return Status::Ok();
}

Status Parser::TensorInfo(uint64_t index, Info* info) {
  const uint64_t at = pos_;
  uint64_t len;
  LB_RETURN_IF_ERROR(Str(
      &info->name, kMaxKeyBytes, [&] { return fmt::format("name of tensor {}", index); }, &len));
  if (len > kMaxKeyBytes) {
    return Bad(fmt::format("tensor {} at offset {}: name is {} bytes long; names are limited to {}",
                           index, at, len, kMaxKeyBytes));
  }
  auto bad = [&](const std::string& what) {
    return Bad(fmt::format("tensor '{}' (info at offset {}): {}", Printable(info->name), at, what));
  };
  uint32_t n_dims;
  LB_RETURN_IF_ERROR(Le(&n_dims, "tensor dims"));
  if (n_dims > kGgufMaxDims) {
    return bad(fmt::format("{} dimensions; GGUF allows at most {}", n_dims, kGgufMaxDims));
  }
  uint64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t ne;
    LB_RETURN_IF_ERROR(Count(&ne, "tensor dim"));
    if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return bad(fmt::format("dimension {} is {}, past the largest int64", d, ne));
    }
    if (ne != 0 && elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne) {
      return bad("the element count overflows int64");
    }
    elements *= ne;
    info->ne.push_back(ne);
  }
  LB_RETURN_IF_ERROR(Le(&info->type, "tensor type"));
  if (info->type >= kGgmlTypeCount || kGgmlTypes[info->type].name == nullptr) {
    return bad(fmt::format("unknown ggml type {}", info->type));
  }
  const GgmlType& t = kGgmlTypes[info->type];
  if (elements % t.block != 0) {
    return bad(fmt::format("{} elements of {} are not a whole number of {}-element blocks",
                           elements, t.name, t.block));
  }
  if (!info->ne.empty() && info->ne[0] % t.block != 0) ++across_blocks_;
  if (elements / t.block > std::numeric_limits<uint64_t>::max() / t.bytes) {
    return bad("the byte size overflows 64 bits");
  }
  info->size = elements / t.block * t.bytes;
  return Le(&info->rel_offset, "tensor offset");
}

Status Parser::Preamble(uint64_t* n_tensors, uint64_t* n_kv) {
  uint32_t magic;
  LB_RETURN_IF_ERROR(Le(&magic, "magic"));
  if (magic != kGgufMagic) return Bad(fmt::format("wrong magic 0x{:08x}", magic));
  LB_RETURN_IF_ERROR(Le(&version_, "version"));
  if (version_ != 0 && (version_ & 0xFFFF) == 0) {
    return Status::BadInput(
        fmt::format("{}: big-endian GGUF file (version field reads 0x{:08x}); this build reads "
                    "little-endian GGUF only",
                    path_, version_));
  }
  if (version_ < 1 || version_ > 3) {
    return Bad(fmt::format("unsupported version {} (this build reads versions 1 to 3)", version_));
  }
  LB_RETURN_IF_ERROR(Count(n_tensors, "tensor count"));
  LB_RETURN_IF_ERROR(Count(n_kv, "key-value count"));
  // The smallest key-value (empty key, a u8) and tensor info (empty name, no dims); counts the
  // rest of the file cannot hold are refused before anything is reserved for them.
  const uint64_t len_size = version_ == 1 ? 4 : 8;
  const uint64_t min_kv = len_size + 4 + 1, min_info = len_size + 4 + 4 + 8;
  if (*n_kv > (size_ - pos_) / min_kv) {
    return Bad(fmt::format("key-value count {} cannot fit in the {} bytes after the header", *n_kv,
                           size_ - pos_));
  }
  if (*n_tensors > (size_ - pos_) / min_info) {
    return Bad(fmt::format("tensor count {} cannot fit in the {} bytes after the header",
                           *n_tensors, size_ - pos_));
  }
  return Status::Ok();
}

Status Parser::TensorInfos(uint64_t n_tensors, std::vector<Info>* infos) {
  // *infos grows as infos are read, never sized from the claimed count.
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Info info;
    LB_RETURN_IF_ERROR(TensorInfo(i, &info));
    if (!names.insert(info.name).second) {
      return Bad(fmt::format("tensor name '{}' appears twice", Printable(info.name)));
    }
    infos->push_back(std::move(info));
  }
  return Status::Ok();
}

Status Parser::PlaceTensors(const std::vector<Info>& infos, uint64_t data_offset,
                            TensorTable* t) const {
  const uint64_t data_len = data_offset <= size_ ? size_ - data_offset : 0;
  t->tensors.reserve(infos.size());
  for (const Info& in : infos) {
    if (in.rel_offset % alignment_ != 0) {
      return Bad(fmt::format("tensor '{}': offset {} is not a multiple of the alignment {}",
                             Printable(in.name), in.rel_offset, alignment_));
    }
    if (data_offset > size_ || in.rel_offset > data_len || in.size > data_len - in.rel_offset) {
      return Bad(fmt::format("tensor '{}': {} bytes at data offset {} run past the end of the "
                             "file (data section [{}, {}))",
                             Printable(in.name), in.size, in.rel_offset, data_offset, size_));
    }
    loadbench::TensorInfo x;
    x.name = in.name;
    x.dtype = kGgmlTypes[in.type].name;
    x.shape.assign(in.ne.rbegin(), in.ne.rend());
    x.offset = data_offset + in.rel_offset;
    x.size = in.size;
    t->tensor_bytes += in.size;
    t->tensors.push_back(std::move(x));
  }
  return Status::Ok();
}

Status Parser::CheckOverlaps(const TensorTable& t, uint64_t data_offset) const {
  std::vector<size_t> by_offset(t.tensors.size());
  std::iota(by_offset.begin(), by_offset.end(), 0);
  std::sort(by_offset.begin(), by_offset.end(),
            [&](size_t a, size_t b) { return t.tensors[a].offset < t.tensors[b].offset; });
  const loadbench::TensorInfo* prev = nullptr;
  for (size_t i : by_offset) {
    const auto& x = t.tensors[i];
    if (x.size == 0) continue;
    if (prev && x.offset < prev->offset + prev->size) {
      return Bad(fmt::format("tensor '{}' at data offset {} overlaps tensor '{}' ({} bytes at {})",
                             Printable(x.name), x.offset - data_offset, Printable(prev->name),
                             prev->size, prev->offset - data_offset));
    }
    prev = &x;
  }
  return Status::Ok();
}

void Parser::Describe(uint64_t n_tensors, uint64_t n_kv, uint64_t data_offset,
                      TensorTable* t) const {
  t->header["version"] = version_;
  t->header["tensor_count"] = n_tensors;
  t->header["kv_count"] = n_kv;
  t->header["alignment"] = alignment_;
  t->header["data_offset"] = data_offset;
  t->header["rows_across_blocks"] = across_blocks_;
  t->header["duplicate_keys"] = duplicates_;
  t->header["metadata"] = metadata_;
  if (keys_.size() > kMaxShownKeys)
    t->header["metadata_keys_not_shown"] = keys_.size() - kMaxShownKeys;
  t->header["checksum"] = checksum_ ? OJson(fmt::format("{:016x}", *checksum_)) : OJson();
  t->header["gen_spec_id"] = gen_spec_ ? OJson(fmt::format("{:016x}", *gen_spec_)) : OJson();
  if (model_checksum_) t->header["model_checksum"] = fmt::format("{:016x}", *model_checksum_);
  if (!split_[0].is_null() || !split_[1].is_null() || !split_[2].is_null()) {
    OJson split = OJson::object();
    for (size_t i = 0; i < 3; ++i) split[kSplitFields[i]] = split_[i];
    t->header["split"] = std::move(split);
  }
}

Status Parser::Parse(TensorTable* out) {
  uint64_t n_tensors = 0, n_kv = 0;
  LB_RETURN_IF_ERROR(Preamble(&n_tensors, &n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) LB_RETURN_IF_ERROR(KeyValue(i));
  std::vector<Info> infos;
  LB_RETURN_IF_ERROR(TensorInfos(n_tensors, &infos));

  // As the reference reader computes it: the data section starts at the first multiple of the
  // alignment at or after the end of the tensor infos. It may lie past the end of the file:
  // then no tensor can be placed, the table's offset stops at the file's end, and the header
  // shows the offset as computed.
  const uint64_t infos_end = pos_;
  const uint64_t data_offset = (infos_end + alignment_ - 1) / alignment_ * alignment_;

  TensorTable t;
  t.format = "gguf";
  t.file_size = size_;
  t.data_offset = std::min(data_offset, size_);
  LB_RETURN_IF_ERROR(PlaceTensors(infos, data_offset, &t));
  LB_RETURN_IF_ERROR(CheckOverlaps(t, data_offset));
  t.expected_checksum = checksum_;
  Describe(n_tensors, n_kv, data_offset, &t);
  *out = std::move(t);
  return Status::Ok();
}

// Little-endian appends for the writer.
template <typename T>
void Put(std::vector<std::byte>* b, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  b->insert(b->end(), p, p + sizeof v);
}
void PutString(std::vector<std::byte>* b, const std::string& s) {
  Put<uint64_t>(b, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  b->insert(b->end(), p, p + s.size());
}

}  // namespace

Status ReadGguf(const ByteSource& src, TensorTable* out) { return Parser(src).Parse(out); }

bool GgufTypeFor(WlfDType dtype, uint32_t* code) {
  switch (dtype) {
    case WlfDType::kF32:
      *code = 0;
      return true;
    case WlfDType::kF16:
      *code = 1;
      return true;
    case WlfDType::kBF16:
      *code = 30;
      return true;
    case WlfDType::kF64:
      *code = 28;
      return true;
    case WlfDType::kI8:
      *code = 24;
      return true;
    case WlfDType::kI16:
      *code = 25;
      return true;
    case WlfDType::kI32:
      *code = 26;
      return true;
    case WlfDType::kI64:
      *code = 27;
      return true;
    default:
      return false;
  }
}

GgufKv GgufString(const std::string& key, const std::string& value) {
  GgufKv kv{key, kString, {}};
  PutString(&kv.value, value);
  return kv;
}

GgufKv GgufStringArray(const std::string& key, const std::vector<std::string>& values) {
  GgufKv kv{key, kArray, {}};
  Put<uint32_t>(&kv.value, kString);
  Put<uint64_t>(&kv.value, values.size());
  for (const auto& v : values) PutString(&kv.value, v);
  return kv;
}

GgufKv GgufArray(const std::string& key, uint32_t elem_type, uint64_t count,
                 const std::vector<std::byte>& elements) {
  GgufKv kv{key, kArray, {}};
  Put<uint32_t>(&kv.value, elem_type);
  Put<uint64_t>(&kv.value, count);
  kv.value.insert(kv.value.end(), elements.begin(), elements.end());
  return kv;
}

Status EncodeGgufHead(const std::vector<WlfTensorSpec>& tensors, const std::vector<GgufKv>& kvs,
                      uint32_t alignment, FileLayout* layout, std::vector<std::byte>* head) {
  if (!IsPowerOfTwo(alignment)) {
    return Status::BadInput(fmt::format("GGUF alignment {} must be a power of two", alignment));
  }
  constexpr uint64_t kLimit = 1ull << 62;
  std::vector<std::byte> b;
  Put<uint32_t>(&b, kGgufMagic);
  Put<uint32_t>(&b, 3);
  Put<uint64_t>(&b, tensors.size());
  Put<uint64_t>(&b, kvs.size() + 1);
  PutString(&b, "general.alignment");
  Put<uint32_t>(&b, kUint32);
  Put<uint32_t>(&b, alignment);
  for (const GgufKv& kv : kvs) {
    PutString(&b, kv.key);
    Put<uint32_t>(&b, kv.type);
    b.insert(b.end(), kv.value.begin(), kv.value.end());
  }
  FileLayout l;
  l.align = alignment;
  uint64_t rel = 0;
  for (const auto& t : tensors) {
    uint32_t type;
    if (!GgufTypeFor(t.dtype, &type)) {
      std::string name;
      WlfDTypeInfo(static_cast<uint32_t>(t.dtype), &name, nullptr);
      return Status::BadInput(fmt::format("tensor '{}': GGUF has no {} type", t.name, name));
    }
    if (t.shape.size() > kGgufMaxDims) {
      return Status::BadInput(fmt::format("tensor '{}': {} dimensions; GGUF allows at most {}",
                                          t.name, t.shape.size(), kGgufMaxDims));
    }
    uint64_t size = kGgmlTypes[type].bytes;
    for (uint64_t d : t.shape) {
      if (d != 0 && size > kLimit / d) {
        return Status::BadInput(fmt::format("tensor '{}': size overflows", t.name));
      }
      size *= d;
    }
    PutString(&b, t.name);
    Put<uint32_t>(&b, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) Put<uint64_t>(&b, *it);
    Put<uint32_t>(&b, type);
    Put<uint64_t>(&b, rel);
    l.tensor_offsets.push_back(rel);
    l.tensor_sizes.push_back(size);
    if (size > kLimit - alignment || rel > kLimit - alignment - size) {
      return Status::BadInput("file size overflows");
    }
    rel = (rel + size + alignment - 1) / alignment * alignment;
  }
  l.data_offset = (b.size() + alignment - 1) / alignment * alignment;
  for (auto& off : l.tensor_offsets) off += l.data_offset;
  l.data_end = l.file_size = l.data_offset + rel;
  b.resize(l.data_offset);  // zero padding up to the data section
  *head = std::move(b);
  *layout = std::move(l);
  return Status::Ok();
}

}  // namespace loadbench
