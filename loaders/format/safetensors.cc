// safetensors reading and writing. The JSON header goes through nlohmann's SAX interface, not
// its DOM: the schema is checked as the tokens arrive (a wrong type is refused where it stands),
// and a 20,000-tensor header costs no tree of maps.
#include "loaders/format/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/base/text.h"

namespace loadbench {
namespace {

using Json = nlohmann::json;

struct DTypeRow {
  const char* name;  // as in the file
  uint64_t bits;     // per element; the F4 and F6 types pack below a byte
};
constexpr DTypeRow kDTypes[] = {
    {"BOOL", 8},    {"U8", 8},   {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8},
    {"F8_E8M0", 8}, {"I16", 16}, {"U16", 16}, {"F16", 16},    {"BF16", 16},
    {"I32", 32},    {"U32", 32}, {"F32", 32}, {"C64", 64},    {"F64", 64},
    {"I64", 64},    {"U64", 64}, {"F4", 4},   {"F6_E2M3", 6}, {"F6_E3M2", 6},
};

const DTypeRow* FindDType(const std::string& name) {
  for (const auto& row : kDTypes) {
    if (name == row.name) return &row;
  }
  return nullptr;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

constexpr size_t kMaxShownKeys = 1024;  // __metadata__ keys listed in inspect's header

// Shapes deeper than this are refused: no real tensor comes near, and a header of nothing but
// one long shape array would otherwise cost eight bytes of memory per two bytes of JSON.
constexpr size_t kMaxRank = 64;
// Unknown fields of a tensor entry are skipped, as the reference reader ignores them; nesting
// past this depth is refused.
constexpr int kMaxSkipDepth = 64;

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t offsets[2] = {0, 0};
  size_t offsets_seen = 0;
  bool has_dtype = false, has_shape = false, has_offsets = false;
};

// Checks the header against the schema as nlohmann's parser reports tokens. On a violation it
// records a message and returns false, which stops the parser at once.
class HeaderSax {
 public:
  // The table in the making: `offset` and `size` hold data_offsets' begin and end, and `dtype`
  // the file's name for it, until ReadSafetensors has checked them. One vector, filled once: on
  // a VM every fresh page of a copy costs a fault.
  std::vector<TensorInfo> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
  bool has_metadata = false;
  std::string error;       // set on a schema violation
  std::string json_error;  // set on a syntax error

  bool null() { return Value("null"); }
  bool boolean(bool) { return Value("a boolean"); }
  bool number_integer(Json::number_integer_t v) {
    if (state_ == State::kShape || state_ == State::kOffsets) {
      return Fail(fmt::format("{} holds {}, which is negative", Where(), v));
    }
    return Value("a number");
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (state_ == State::kShape) {
      if (cur_.shape.size() >= kMaxRank) {
        return Fail(fmt::format("{} has more than {} dimensions", Where(), kMaxRank));
      }
      cur_.shape.push_back(v);
      return true;
    }
    if (state_ == State::kOffsets) {
      if (cur_.offsets_seen >= 2) return Fail(fmt::format("{} has more than 2 entries", Where()));
      cur_.offsets[cur_.offsets_seen++] = v;
      return true;
    }
    return Value("a number");
  }
  bool number_float(Json::number_float_t, const std::string& text) {
    if (state_ == State::kShape || state_ == State::kOffsets) {
      return Fail(
          fmt::format("{} holds {}, which is not an integer from 0 to 2^64-1", Where(), text));
    }
    return Value("a number");
  }
  bool string(std::string& v) {
    if (state_ == State::kMetaValue) {
      metadata.emplace_back(std::move(meta_key_), std::move(v));
      state_ = State::kMetaKey;
      return true;
    }
    if (state_ == State::kDtype) {
      cur_.dtype = std::move(v);
      state_ = State::kTensorKey;
      return true;
    }
    return Value("a string");
  }
  bool binary(Json::binary_t&) { return Value("binary data"); }

  bool start_object(std::size_t) {
    switch (state_) {
      case State::kStart:
        state_ = State::kTopKey;
        return true;
      case State::kMetaStart:
        state_ = State::kMetaKey;
        return true;
      case State::kTensorStart:
        state_ = State::kTensorKey;
        return true;
      case State::kSkip:
        return SkipDeeper();
      default:
        return Value("an object");
    }
  }
  bool end_object() {
    switch (state_) {
      case State::kTopKey:
        state_ = State::kDone;
        return true;
      case State::kMetaKey:
        state_ = State::kTopKey;
        return true;
      case State::kTensorKey:
        return FinishTensor();
      case State::kSkip:
        return SkipShallower();
      default:
        return Fail("unexpected end of object");  // the parser catches this first
    }
  }
  bool start_array(std::size_t) {
    switch (state_) {
      case State::kShapeStart:
        state_ = State::kShape;
        return true;
      case State::kOffsetsStart:
        state_ = State::kOffsets;
        return true;
      case State::kSkip:
        return SkipDeeper();
      default:
        return Value("an array");
    }
  }
  bool end_array() {
    switch (state_) {
      case State::kShape:
        state_ = State::kTensorKey;
        return true;
      case State::kOffsets:
        if (cur_.offsets_seen != 2) {
          return Fail(fmt::format("{} has {} entries, not 2", Where(), cur_.offsets_seen));
        }
        state_ = State::kTensorKey;
        return true;
      case State::kSkip:
        return SkipShallower();
      default:
        return Fail("unexpected end of array");
    }
  }

  bool key(std::string& k) {
    switch (state_) {
      case State::kTopKey:
        if (k == "__metadata__") {
          if (has_metadata) return Fail("key '__metadata__' appears twice");
          has_metadata = true;
          state_ = State::kMetaStart;
          return true;
        }
        cur_ = RawTensor{};
        cur_.name = k;
        state_ = State::kTensorStart;
        return true;
      case State::kMetaKey:
        meta_key_ = k;
        state_ = State::kMetaValue;
        return true;
      case State::kTensorKey:
        field_ = k;
        if (k == "dtype") return Field(&cur_.has_dtype, State::kDtype);
        if (k == "shape") return Field(&cur_.has_shape, State::kShapeStart);
        if (k == "data_offsets") return Field(&cur_.has_offsets, State::kOffsetsStart);
        state_ = State::kSkip;
        skip_depth_ = 0;
        return true;
      case State::kSkip:
        return true;
      default:
        return Fail("unexpected key");
    }
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ...", and
    // may quote raw bytes of the header.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
      what = what.substr(what.find("] ") + 2);
    }
    json_error = fmt::format("JSON error at header byte {}: {}", position, Printable(what));
    return false;
  }

 private:
  enum class State {
    kStart,
    kTopKey,
    kMetaStart,
    kMetaKey,
    kMetaValue,
    kTensorStart,
    kTensorKey,
    kDtype,
    kShapeStart,
    kShape,
    kOffsetsStart,
    kOffsets,
    kSkip,
    kDone,
  };

  bool Fail(std::string msg) {
    if (error.empty()) error = std::move(msg);
    return false;
  }

  // "tensor 'x': shape" or "__metadata__ 'k'": the place the current token belongs to.
  std::string Where() const {
    switch (state_) {
      case State::kMetaStart:
        return "__metadata__";
      case State::kMetaKey:
      case State::kMetaValue:
        return fmt::format("__metadata__ '{}'", Printable(meta_key_));
      case State::kTensorStart:
      case State::kTensorKey:
        return fmt::format("tensor '{}'", Printable(cur_.name));
      case State::kDtype:
      case State::kShapeStart:
      case State::kShape:
      case State::kOffsetsStart:
      case State::kOffsets:
      case State::kSkip:
        return fmt::format("tensor '{}': {}", Printable(cur_.name), Printable(field_));
      default:
        return "the header";
    }
  }

  // A scalar (or the start of a container) where the schema wants something else.
  bool Value(const char* what) {
    switch (state_) {
      case State::kSkip:
        if (skip_depth_ == 0) state_ = State::kTensorKey;
        return true;
      case State::kStart:
        return Fail(fmt::format("the header is {}, not a JSON object", what));
      case State::kMetaStart:
        return Fail(fmt::format("__metadata__ is {}, not an object of strings", what));
      case State::kMetaValue:
        return Fail(fmt::format("{} is {}, not a string", Where(), what));
      case State::kTensorStart:
        return Fail(fmt::format("{} is {}, not an object", Where(), what));
      case State::kDtype:
        return Fail(fmt::format("{} is {}, not a string", Where(), what));
      case State::kShapeStart:
      case State::kOffsetsStart:
        return Fail(fmt::format("{} is {}, not an array of integers", Where(), what));
      case State::kShape:
      case State::kOffsets:
        return Fail(fmt::format("{} holds {}, not an integer", Where(), what));
      default:
        return Fail(fmt::format("unexpected {}", what));
    }
  }

  bool Field(bool* seen, State next) {
    if (*seen) {
      return Fail(fmt::format("tensor '{}': field {} appears twice", Printable(cur_.name), field_));
    }
    *seen = true;
    state_ = next;
    return true;
  }

  bool SkipDeeper() {
    if (++skip_depth_ > kMaxSkipDepth) {
      return Fail(fmt::format("{} nests deeper than {} levels", Where(), kMaxSkipDepth));
    }
    return true;
  }
  bool SkipShallower() {
    if (--skip_depth_ == 0) state_ = State::kTensorKey;
    return true;
  }

  bool FinishTensor() {
    const char* missing = !cur_.has_dtype     ? "dtype"
                          : !cur_.has_shape   ? "shape"
                          : !cur_.has_offsets ? "data_offsets"
                                              : nullptr;
    if (missing) return Fail(fmt::format("tensor '{}' has no {}", Printable(cur_.name), missing));
    TensorInfo& x = tensors.emplace_back();
    x.name = std::move(cur_.name);
    x.dtype = std::move(cur_.dtype);
    x.shape = std::move(cur_.shape);
    x.offset = cur_.offsets[0];
    x.size = cur_.offsets[1];
    state_ = State::kTopKey;
    return true;
  }

  State state_ = State::kStart;
  RawTensor cur_;
  std::string field_;
  std::string meta_key_;
  int skip_depth_ = 0;
};

Status Bad(const std::string& path, const std::string& what) {
  return Status::BadInput(fmt::format("{}: invalid safetensors file: {}", path, what));
}

// Reads the 8-byte header length, checked against the limit and the file, and the JSON header
// it measures into *json.
Status ReadHeaderText(const ByteSource& src, std::string* json) {
  const std::string& path = src.name();
  const uint64_t real_size = src.size();
  if (real_size < 8)
    return Bad(path, fmt::format("{} bytes is shorter than the 8-byte header length", real_size));
  uint64_t n = 0;
  LB_RETURN_IF_ERROR(src.ReadAt(&n, sizeof n, 0));
  if (n > kSafetensorsMaxHeader) {
    return Bad(path, fmt::format("header length {} exceeds the limit of {} bytes", n,
                                 kSafetensorsMaxHeader));
  }
  if (n > real_size - 8) {
    return Bad(path, fmt::format("header length {} runs past the end of the file ({} bytes)", n,
                                 real_size));
  }
  if (n == 0) return Bad(path, "header length is 0: there is no JSON header");
  json->assign(n, '\0');
  return src.ReadAt(json->data(), json->size(), 8);
}

// Parses the JSON header into *sax, checking the schema as it goes.
Status ParseHeader(const std::string& path, const std::string& json, HeaderSax* sax) {
  const bool parsed =
      Json::sax_parse(json.data(), json.data() + json.size(), sax, Json::input_format_t::json,
                      /*strict=*/true, /*ignore_comments=*/false);
  if (!parsed) {
    if (!sax->error.empty()) return Bad(path, sax->error);
    if (!sax->json_error.empty()) return Bad(path, sax->json_error);
    return Bad(path, "the JSON header is incomplete");
  }
  return Status::Ok();
}

// Checks one tensor as the header gave it (dtype known, shape's byte count, data_offsets inside
// the data area and of that size) and turns it into the table's form: a lower-case dtype and
// the offset and size of its bytes in the file.
Status CheckTensor(const std::string& path, uint64_t data_offset, uint64_t data_len,
                   TensorInfo* r) {
  auto bad_tensor = [&](const std::string& what) {
    return Bad(path, fmt::format("tensor '{}': {}", Printable(r->name), what));
  };
  const DTypeRow* dt = FindDType(r->dtype);
  if (dt == nullptr) return bad_tensor(fmt::format("unknown dtype '{}'", Printable(r->dtype)));
  uint64_t elements = 1;
  for (uint64_t d : r->shape) {
    if (d != 0 && elements > std::numeric_limits<uint64_t>::max() / d) {
      return bad_tensor(
          fmt::format("shape {} has 2^64 or more elements", fmt::join(r->shape, "x")));
    }
    elements *= d;
  }
  // Bytes, without computing bits: q whole groups of 8 elements are q * bits bytes exactly,
  // and the r < 8 left over must fill whole bytes.
  const uint64_t q = elements / 8, rem_bits = elements % 8 * dt->bits;
  if (rem_bits % 8 != 0) {
    return bad_tensor(fmt::format("{} elements of {} ({} bits each) do not fill whole bytes",
                                  elements, r->dtype, dt->bits));
  }
  if (q > (std::numeric_limits<uint64_t>::max() - rem_bits / 8) / dt->bits) {
    return bad_tensor(
        fmt::format("{} elements of {} overflow a 64-bit byte count", elements, r->dtype));
  }
  const uint64_t bytes = q * dt->bits + rem_bits / 8;
  const uint64_t begin = r->offset, end = r->size;
  if (end < begin) {
    return bad_tensor(fmt::format("data_offsets [{}, {}] end before they begin", begin, end));
  }
  if (end > data_len) {
    return bad_tensor(
        fmt::format("data_offsets [{}, {}] run past the end of the data ({} bytes from offset {})",
                    begin, end, data_len, data_offset));
  }
  if (end - begin != bytes) {
    return bad_tensor(fmt::format("data_offsets [{}, {}] hold {} bytes, but shape [{}] of {} "
                                  "needs {}",
                                  begin, end, end - begin, fmt::join(r->shape, ", "), r->dtype,
                                  bytes));
  }
  r->dtype = Lower(std::move(r->dtype));
  r->offset = data_offset + begin;
  r->size = end - begin;
  return Status::Ok();
}

// Names are checked once the table is complete: views into it stay valid from here on.
Status CheckUniqueNames(const std::string& path, const std::vector<TensorInfo>& tensors) {
  std::unordered_set<std::string_view> names;
  names.reserve(tensors.size());
  for (const TensorInfo& x : tensors) {
    if (!names.insert(x.name).second) {
      return Bad(path, fmt::format("tensor '{}' appears twice", Printable(x.name)));
    }
  }
  return Status::Ok();
}

// How the tensors use the data area.
struct DataUse {
  uint64_t total = 0;  // bytes of all tensors
  uint64_t gaps = 0;   // bytes between tensors that none claims
  uint64_t end = 0;    // file offset where the last tensor's bytes end
};

// Puts the tensors in data order, the order a sequential reader meets the bytes in and the
// order checksums use, and checks that no two overlap.
Status SortAndCheckOverlaps(const std::string& path, uint64_t data_offset,
                            std::vector<TensorInfo>* tensors, DataUse* use) {
  // Writers put the header in data order, so the sort (and its buffer) is rarely needed.
  auto by_offset = [](const TensorInfo& a, const TensorInfo& b) { return a.offset < b.offset; };
  if (!std::is_sorted(tensors->begin(), tensors->end(), by_offset)) {
    std::stable_sort(tensors->begin(), tensors->end(), by_offset);
  }
  uint64_t prev_end = data_offset, total = 0, gaps = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& x : *tensors) {
    if (x.size == 0) continue;  // an empty range overlaps nothing
    if (x.offset < prev_end) {
      return Bad(path, fmt::format("tensor '{}' at [{}, {}) overlaps tensor '{}' ending at {}",
                                   Printable(x.name), x.offset - data_offset,
                                   x.offset + x.size - data_offset,
                                   prev ? Printable(prev->name) : "", prev_end - data_offset));
    }
    gaps += x.offset - prev_end;
    prev_end = x.offset + x.size;
    prev = &x;
    total += x.size;
  }
  *use = {total, gaps, prev_end};
  return Status::Ok();
}

// The __metadata__ keys to show in *shown, and loadbench's own keys, which must be 16 hex
// digits: the checksum into t->expected_checksum and the generator's spec id into *gen_spec.
// At most kMaxShownKeys keys are shown: an ordered_json object looks keys up linearly, and a
// header may hold millions. loadbench's own keys are read wherever they are.
Status ReadMetadata(const std::string& path, const HeaderSax& sax, TensorTable* t,
                    nlohmann::ordered_json* shown, std::optional<uint64_t>* gen_spec) {
  *shown = nlohmann::ordered_json::object();
  for (const auto& [k, v] : sax.metadata) {
    if (shown->size() < kMaxShownKeys) (*shown)[k] = v;
    uint64_t value = 0;
    const bool ours = k == kSafetensorsChecksumKey || k == kSafetensorsGenSpecKey;
    if (ours && !ParseHex64(v, &value)) {
      return Bad(path, fmt::format("__metadata__ '{}' is '{:.40}', not 16 lower-case hex digits", k,
                                   Printable(v)));
    }
    if (k == kSafetensorsChecksumKey) t->expected_checksum = value;
    if (k == kSafetensorsGenSpecKey) *gen_spec = value;
  }
  return Status::Ok();
}

// The header as `inspect` shows it.
void DescribeHeader(const HeaderSax& sax, const DataUse& use, nlohmann::ordered_json meta,
                    const std::optional<uint64_t>& gen_spec, TensorTable* t) {
  const uint64_t data_offset = t->data_offset;
  t->header["header_bytes"] = data_offset - 8;  // the JSON: what follows the 8-byte length
  t->header["data_offset"] = data_offset;
  t->header["padded_to_8"] = data_offset % 8 == 0;
  t->header["tensor_count"] = t->tensors.size();
  // Bytes of the data area no tensor claims (the reference reader refuses files with any).
  t->header["unclaimed_bytes"] = use.gaps + (t->file_size - use.end);
  t->header["metadata"] = sax.has_metadata ? std::move(meta) : nlohmann::ordered_json();
  if (sax.metadata.size() > kMaxShownKeys) {
    t->header["metadata_keys_not_shown"] = sax.metadata.size() - kMaxShownKeys;
  }
  t->header["checksum"] =
      t->expected_checksum ? nlohmann::ordered_json(fmt::format("{:016x}", *t->expected_checksum))
                           : nlohmann::ordered_json();
  t->header["gen_spec_id"] = gen_spec ? nlohmann::ordered_json(fmt::format("{:016x}", *gen_spec))
                                      : nlohmann::ordered_json();
}

}  // namespace

bool LooksLikeSafetensors(const unsigned char* head, size_t len) {
  return len >= 9 && head[8] == '{';
}

Status ReadSafetensors(const ByteSource& src, TensorTable* out) {
  const std::string& path = src.name();
  const uint64_t real_size = src.size();
  std::string json;
  LB_RETURN_IF_ERROR(ReadHeaderText(src, &json));
  HeaderSax sax;
  LB_RETURN_IF_ERROR(ParseHeader(path, json, &sax));

  const uint64_t data_offset = 8 + json.size();
  const uint64_t data_len = real_size - data_offset;
  TensorTable t;
  t.format = "safetensors";
  t.file_size = real_size;
  t.data_offset = data_offset;
  for (TensorInfo& r : sax.tensors) {
    LB_RETURN_IF_ERROR(CheckTensor(path, data_offset, data_len, &r));
  }
  t.tensors = std::move(sax.tensors);
  LB_RETURN_IF_ERROR(CheckUniqueNames(path, t.tensors));
  DataUse use;
  LB_RETURN_IF_ERROR(SortAndCheckOverlaps(path, data_offset, &t.tensors, &use));
  t.tensor_bytes = use.total;

  nlohmann::ordered_json meta;
  std::optional<uint64_t> gen_spec;
  LB_RETURN_IF_ERROR(ReadMetadata(path, sax, &t, &meta, &gen_spec));
  DescribeHeader(sax, use, std::move(meta), gen_spec, &t);
  *out = std::move(t);
  return Status::Ok();
}

std::string SafetensorsDTypeName(WlfDType dtype) {
  std::string name;
  WlfDTypeInfo(static_cast<uint32_t>(dtype), &name, nullptr);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

Status EncodeSafetensorsHead(const std::vector<WlfTensorSpec>& tensors,
                             const std::vector<std::pair<std::string, std::string>>& metadata,
                             FileLayout* layout, std::vector<std::byte>* head, uint64_t misalign) {
  constexpr uint64_t kLimit = 1ull << 62;
  constexpr uint64_t kMisalignPeriod = 64;  // a cache line, and the widest vector load
  if (misalign >= kMisalignPeriod) {
    return Status::BadInput(fmt::format("misalign {} must be below {}", misalign, kMisalignPeriod));
  }
  // The JSON text is built entry by entry: an ordered_json object looks keys up linearly, which
  // makes 20,000 tensors cost seconds.
  std::string text = "{";
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    text += "\"__metadata__\":" + m.dump();
  }
  std::unordered_set<std::string> names = {"__metadata__"};
  FileLayout l;
  l.align = 1;
  uint64_t pos = 0;
  for (const auto& t : tensors) {
    uint64_t size = 0;
    if (!WlfDTypeInfo(static_cast<uint32_t>(t.dtype), nullptr, &size)) {
      return Status::BadInput(fmt::format("tensor '{}': unknown dtype", t.name));
    }
    if (!names.insert(t.name).second) {
      return Status::BadInput(fmt::format("tensor '{}': name used twice", t.name));
    }
    for (uint64_t d : t.shape) {
      if (d != 0 && size > kLimit / d) {
        return Status::BadInput(fmt::format("tensor '{}': size overflows", t.name));
      }
      size *= d;
    }
    if (pos > kLimit - size) return Status::BadInput("file size overflows");
    if (text.size() > 1) text += ',';
    text += nlohmann::ordered_json(t.name).dump();
    text += ':';
    text += nlohmann::ordered_json{{"dtype", SafetensorsDTypeName(t.dtype)},
                                   {"shape", t.shape},
                                   {"data_offsets", {pos, pos + size}}}
                .dump();
    l.tensor_offsets.push_back(pos);
    l.tensor_sizes.push_back(size);
    pos += size;
  }
  text += '}';
  // Trailing spaces are JSON whitespace, which every reader skips.
  if (misalign == 0) {
    text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  } else {
    text.append(
        (kMisalignPeriod + misalign - (8 + text.size()) % kMisalignPeriod) % kMisalignPeriod, ' ');
  }
  if (text.size() > kSafetensorsMaxHeader) {
    return Status::BadInput(fmt::format("safetensors header of {} bytes exceeds the {} byte limit",
                                        text.size(), kSafetensorsMaxHeader));
  }
  const uint64_t n = text.size();
  l.data_offset = 8 + n;
  for (auto& off : l.tensor_offsets) off += l.data_offset;
  l.data_end = l.file_size = l.data_offset + pos;
  head->resize(l.data_offset);
  std::memcpy(head->data(), &n, sizeof n);
  std::memcpy(head->data() + 8, text.data(), n);
  *layout = std::move(l);
  return Status::Ok();
}

}  // namespace loadbench
