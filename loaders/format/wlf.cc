// WLF reading, validation and writing, in either byte order. Validation follows one rule: no
// field is used before it has been checked, every bounds check is overflow-safe
// (`off <= size && len <= size - off`), and every value read from a dynamic offset is copied out
// with memcpy and then, in a big-endian file, byte-swapped into host order.
#include "loaders/format/wlf.h"

#include <bit>
#include <cstring>
#include <limits>

#include <boost/endian/conversion.hpp>
#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/base/text.h"

namespace loadbench {
namespace {

static_assert(std::endian::native == std::endian::little,
              "WLF fields are read as host integers and swapped when the file is big-endian; "
              "this build needs a little-endian host");

using boost::endian::endian_reverse_inplace;

// Each integer field reversed in place: a big-endian file's fields into host order and host
// fields into a big-endian file's (the swap is its own inverse).
void Reverse(WlfHeader* h) {
  endian_reverse_inplace(h->magic);
  endian_reverse_inplace(h->version);
  endian_reverse_inplace(h->tensor_count);
  endian_reverse_inplace(h->meta_offset);
  endian_reverse_inplace(h->data_offset);
  endian_reverse_inplace(h->file_size);
  endian_reverse_inplace(h->flags);
  endian_reverse_inplace(h->reserved[0]);
  endian_reverse_inplace(h->reserved[1]);
}

void Reverse(WlfTensorEntry* e) {
  endian_reverse_inplace(e->name_offset);
  endian_reverse_inplace(e->dtype);
  endian_reverse_inplace(e->pad);
  endian_reverse_inplace(e->shape_offset);
  endian_reverse_inplace(e->shape_count);
  endian_reverse_inplace(e->data_offset);
  endian_reverse_inplace(e->data_size);
}

void Reverse(WlfTail* t) {
  endian_reverse_inplace(t->magic);
  endian_reverse_inplace(t->file_size);
}

// Reverses every element of `T` in [data, data + count * sizeof(T)); memcpy because tensor
// bytes carry no alignment promise for T.
template <typename T>
void ReverseElements(std::byte* data, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof v, sizeof v);
    endian_reverse_inplace(v);
    std::memcpy(data + i * sizeof v, &v, sizeof v);
  }
}

struct DTypeRow {
  const char* name;
  uint64_t size;
};
constexpr DTypeRow kDTypes[kWlfDTypeCount] = {
    {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"f64", 8},     {"i8", 1},
    {"u8", 1},  {"i16", 2}, {"u16", 2},  {"i32", 4},     {"u32", 4},
    {"i64", 8}, {"u64", 8}, {"bool", 1}, {"f8_e4m3", 1}, {"f8_e5m2", 1},
};

// True when [off, off + len) lies inside [0, size).
bool InBounds(uint64_t off, uint64_t len, uint64_t size) {
  return off <= size && len <= size - off;
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Largest header region we read into memory: the table and aux area of a file with millions of
// tensors fits; a corrupted tensor_count cannot make us allocate the whole disk.
constexpr uint64_t kMaxMetaBytes = 1ull << 30;
constexpr uint64_t kMaxShapeRank = 16;
constexpr uint64_t kMaxNameBytes = 4096;

}  // namespace

bool WlfDTypeInfo(uint32_t code, std::string* name, uint64_t* elem_size) {
  if (code >= kWlfDTypeCount) return false;
  if (name) *name = kDTypes[code].name;
  if (elem_size) *elem_size = kDTypes[code].size;
  return true;
}

bool WlfDTypeFromName(const std::string& name, WlfDType* out) {
  for (uint32_t i = 0; i < kWlfDTypeCount; ++i) {
    if (name == kDTypes[i].name) {
      *out = static_cast<WlfDType>(i);
      return true;
    }
  }
  return false;
}

namespace {

// One WLF file being read. Every message names the file and, once the magic has shown it, that
// the file is big-endian: a corrupted magic that happens to read swapped then explains why every
// other field looks wrong. The header, the tail's offset and the metadata area are filled in
// phase by phase, each only after its checks have passed.
struct WlfFile {
  explicit WlfFile(const ByteSource& src) : src(src), path(src.name()), real_size(src.size()) {}

  const ByteSource& src;
  const std::string& path;
  const uint64_t real_size;
  bool big_endian = false;
  WlfHeader h{};
  uint64_t tail_off = 0;
  uint64_t meta_len = 0;
  // Everything between the header and the data area, read once; all later reads of names,
  // shapes and entries are memcpy's out of this buffer at checked offsets.
  std::vector<std::byte> meta;

  Status Bad(const std::string& what) const {
    return Status::BadInput(
        fmt::format("{}: invalid {}WLF file: {}", path, big_endian ? "big-endian " : "", what));
  }
  Status BadTensor(uint64_t i, const std::string& what) const {
    return Bad(fmt::format("tensor {}: {}", i, what));
  }
  // Once a tensor's name is known every message names it, escaped (a name may hold a newline).
  Status BadNamed(uint64_t i, const std::string& name, const std::string& what) const {
    return BadTensor(i, fmt::format("'{}': {}", Printable(name), what));
  }
  // True when [file_off, file_off + len) lies inside the metadata area; *rel gets its offset
  // into `meta`.
  bool MetaAt(uint64_t file_off, uint64_t len, uint64_t* rel) const {
    if (file_off < h.meta_offset) return false;
    *rel = file_off - h.meta_offset;
    return InBounds(*rel, len, meta_len);
  }
};

// Reads the header and checks the fields that say what the file is: magic (and with it the
// byte order), version and size.
Status ReadWlfHeader(WlfFile* f) {
  if (f->real_size < sizeof(WlfHeader)) {
    return f->Bad(fmt::format("{} bytes is shorter than the 64-byte header", f->real_size));
  }
  WlfHeader& h = f->h;
  LB_RETURN_IF_ERROR(f->src.ReadAt(&h, sizeof h, 0));
  if (h.magic == kWlfMagicSwapped) {
    f->big_endian = true;
    Reverse(&h);
  }
  if (h.magic != kWlfMagic) return f->Bad(fmt::format("wrong magic 0x{:08x}", h.magic));
  if (h.version != kWlfVersion) {
    return f->Bad(fmt::format("unsupported version {} (this build reads version {})", h.version,
                              kWlfVersion));
  }
  if (h.file_size != f->real_size) {
    return f->Bad(fmt::format("{}: header says {} bytes, file has {}",
                              h.file_size > f->real_size ? "truncated" : "trailing bytes",
                              h.file_size, f->real_size));
  }
  if (f->real_size < sizeof(WlfHeader) + sizeof(WlfTail)) {
    return f->Bad("too short for header and tail");
  }
  return Status::Ok();
}

// The tail sentinel: written last, so a file cut short or never finished is caught here,
// before any strategy maps the end of the file.
Status ReadWlfTail(WlfFile* f) {
  WlfTail tail;
  LB_RETURN_IF_ERROR(f->src.ReadAt(&tail, sizeof tail, f->real_size - sizeof tail));
  if (f->big_endian) Reverse(&tail);
  if (tail.magic != kWlfTailMagic || tail.file_size != f->h.file_size) {
    return f->Bad(fmt::format("tail sentinel missing or wrong at offset {} (incomplete write?)",
                              f->real_size - sizeof tail));
  }
  f->tail_off = f->real_size - sizeof tail;
  return Status::Ok();
}

// Checks where the metadata and data areas lie, and that the claimed table fits in the
// metadata area, before anything is allocated for either.
Status CheckWlfAreas(WlfFile* f) {
  const WlfHeader& h = f->h;
  if (h.meta_offset != sizeof(WlfHeader)) {
    return f->Bad(fmt::format("meta_offset {} is not 64", h.meta_offset));
  }
  if (h.data_offset % kWlfDataAlign != 0) {
    return f->Bad(
        fmt::format("data_offset {} is not a multiple of {}", h.data_offset, kWlfDataAlign));
  }
  if (h.data_offset < h.meta_offset) {
    return f->Bad(fmt::format("data_offset {} is inside the header", h.data_offset));
  }
  if (!InBounds(0, h.data_offset, f->tail_off)) {
    return f->Bad(
        fmt::format("data_offset {} is past the end of the data ({})", h.data_offset, f->tail_off));
  }
  f->meta_len = h.data_offset - h.meta_offset;
  if (f->meta_len > kMaxMetaBytes) {
    return f->Bad(fmt::format("metadata area of {} bytes exceeds the {} byte limit", f->meta_len,
                              kMaxMetaBytes));
  }
  if (h.tensor_count > f->meta_len / sizeof(WlfTensorEntry)) {
    return f->Bad(fmt::format("tensor_count {} does not fit in the {} byte metadata area",
                              h.tensor_count, f->meta_len));
  }
  return Status::Ok();
}

// Tensor i's name: NUL-terminated, at a checked offset in the metadata area.
Status ReadWlfName(const WlfFile& f, uint64_t i, const WlfTensorEntry& e, std::string* name) {
  uint64_t rel;
  if (!f.MetaAt(e.name_offset, 1, &rel)) {
    return f.BadTensor(i, fmt::format("name_offset {} outside the metadata area", e.name_offset));
  }
  const auto* name_begin = reinterpret_cast<const char*>(f.meta.data() + rel);
  const uint64_t name_room = std::min<uint64_t>(f.meta_len - rel, kMaxNameBytes + 1);
  const void* nul = std::memchr(name_begin, '\0', name_room);
  if (nul == nullptr) return f.BadTensor(i, "name is not NUL-terminated within 4096 bytes");
  name->assign(name_begin, static_cast<const char*>(nul));
  return Status::Ok();
}

// Tensor i's dtype and shape, and that its data_size is exactly what they make.
Status ReadWlfDTypeAndShape(const WlfFile& f, uint64_t i, const WlfTensorEntry& e,
                            TensorInfo* info) {
  uint64_t elem_size;
  if (!WlfDTypeInfo(e.dtype, &info->dtype, &elem_size)) {
    return f.BadNamed(i, info->name, fmt::format("unknown dtype code {}", e.dtype));
  }
  if (e.shape_count > kMaxShapeRank) {
    return f.BadNamed(i, info->name,
                      fmt::format("shape_count {} exceeds {}", e.shape_count, kMaxShapeRank));
  }
  uint64_t rel;
  if (!f.MetaAt(e.shape_offset, e.shape_count * sizeof(uint64_t), &rel)) {
    return f.BadNamed(i, info->name,
                      fmt::format("shape_offset {} outside the metadata area", e.shape_offset));
  }
  uint64_t elements = 1;
  info->shape.resize(e.shape_count);
  for (uint64_t d = 0; d < e.shape_count; ++d) {
    uint64_t& dim = info->shape[d];
    std::memcpy(&dim, f.meta.data() + rel + d * sizeof(uint64_t), sizeof(uint64_t));
    if (f.big_endian) endian_reverse_inplace(dim);
    if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / dim) {
      return f.BadNamed(i, info->name, "shape product overflows");
    }
    elements *= dim;
  }
  if (elements > std::numeric_limits<uint64_t>::max() / elem_size ||
      elements * elem_size != e.data_size) {
    return f.BadNamed(i, info->name,
                      fmt::format("data_size {} does not match shape and dtype {}", e.data_size,
                                  info->dtype));
  }
  return Status::Ok();
}

// Tensor i's bytes: inside the data area, aligned, and after the previous tensor's, which
// ended at prev_end.
Status CheckWlfPlacement(const WlfFile& f, uint64_t i, const std::string& name,
                         const WlfTensorEntry& e, uint64_t prev_end) {
  const uint64_t data_begin = f.h.data_offset;
  if (e.data_offset < data_begin || !InBounds(e.data_offset, e.data_size, f.tail_off)) {
    return f.BadNamed(i, name,
                      fmt::format("data [{}, +{}) outside the data area [{}, {})", e.data_offset,
                                  e.data_size, data_begin, f.tail_off));
  }
  if (e.data_offset % kWlfMinTensorAlign != 0) {
    return f.BadNamed(i, name,
                      fmt::format("data_offset {} is not {}-byte aligned", e.data_offset,
                                  kWlfMinTensorAlign));
  }
  // Tensors are stored in table order, so "not overlapping" is "each starts after the last".
  if (e.data_offset < prev_end) {
    return f.BadNamed(i, name,
                      fmt::format("data at {} overlaps the previous tensor (ends at {})",
                                  e.data_offset, prev_end));
  }
  return Status::Ok();
}

// Entry i of the tensor table, checked field by field in the order the fields are used;
// *prev_end moves to the end of its data.
Status ReadWlfTensor(const WlfFile& f, uint64_t i, uint64_t* prev_end, TensorInfo* info) {
  WlfTensorEntry e;
  std::memcpy(&e, f.meta.data() + i * sizeof e, sizeof e);
  if (f.big_endian) Reverse(&e);
  LB_RETURN_IF_ERROR(ReadWlfName(f, i, e, &info->name));
  LB_RETURN_IF_ERROR(ReadWlfDTypeAndShape(f, i, e, info));
  LB_RETURN_IF_ERROR(CheckWlfPlacement(f, i, info->name, e, *prev_end));
  *prev_end = e.data_offset + e.data_size;
  info->offset = e.data_offset;
  info->size = e.data_size;
  return Status::Ok();
}

// The header's fields as `inspect` shows them.
void DescribeWlfHeader(const WlfFile& f, TensorTable* t) {
  const WlfHeader& h = f.h;
  t->header["magic"] = fmt::format("0x{:08x}", h.magic);
  t->header["byte_order"] = f.big_endian ? "big" : "little";
  t->header["version"] = h.version;
  t->header["tensor_count"] = h.tensor_count;
  t->header["meta_offset"] = h.meta_offset;
  t->header["data_offset"] = h.data_offset;
  t->header["file_size"] = h.file_size;
  t->header["flags"] = h.flags;
  t->header["checksum"] = (h.flags & kWlfFlagChecksum)
                              ? nlohmann::ordered_json(fmt::format("{:016x}", h.reserved[0]))
                              : nlohmann::ordered_json();
  t->header["gen_spec_id"] = (h.flags & kWlfFlagGenSpec)
                                 ? nlohmann::ordered_json(fmt::format("{:016x}", h.reserved[1]))
                                 : nlohmann::ordered_json();
}

}  // namespace

Status ReadWlf(const ByteSource& src, TensorTable* out) {
  WlfFile f{src};
  const uint64_t real_size = src.size();
  LB_RETURN_IF_ERROR(ReadWlfHeader(&f));
  LB_RETURN_IF_ERROR(ReadWlfTail(&f));
  LB_RETURN_IF_ERROR(CheckWlfAreas(&f));
  f.meta.resize(f.meta_len);
  LB_RETURN_IF_ERROR(src.ReadAt(f.meta.data(), f.meta.size(), f.h.meta_offset));

  TensorTable t;
  t.format = "wlf";
  t.file_size = real_size;
  t.data_offset = f.h.data_offset;
  t.big_endian = f.big_endian;
  t.tensors.reserve(f.h.tensor_count);
  uint64_t prev_end = f.h.data_offset;
  uint64_t total = 0;
  for (uint64_t i = 0; i < f.h.tensor_count; ++i) {
    TensorInfo info;
    LB_RETURN_IF_ERROR(ReadWlfTensor(f, i, &prev_end, &info));
    total += info.size;
    t.tensors.push_back(std::move(info));
  }
  t.tensor_bytes = total;
  if (f.h.flags & kWlfFlagChecksum) t.expected_checksum = f.h.reserved[0];
  DescribeWlfHeader(f, &t);
  *out = std::move(t);
  return Status::Ok();
}

Status PlanWlf(const std::vector<WlfTensorSpec>& tensors, uint64_t align, FileLayout* out) {
  if (!IsPowerOfTwo(align) || align < kWlfMinTensorAlign) {
    return Status::BadInput(fmt::format("alignment {} must be a power of two of at least {}", align,
                                        kWlfMinTensorAlign));
  }
  constexpr uint64_t kLimit = 1ull << 62;  // no real file comes near; keeps sums from wrapping
  uint64_t aux = 0;
  for (const auto& t : tensors) aux += t.name.size() + 1 + t.shape.size() * sizeof(uint64_t) + 8;
  FileLayout l;
  l.align = align;
  l.data_offset = AlignUp(sizeof(WlfHeader) + tensors.size() * sizeof(WlfTensorEntry) + aux,
                          std::max(align, kWlfDataAlign));
  uint64_t pos = l.data_offset;
  for (const auto& t : tensors) {
    std::string dname;
    uint64_t size;
    if (!WlfDTypeInfo(static_cast<uint32_t>(t.dtype), &dname, &size)) {
      return Status::BadInput(fmt::format("tensor '{}': unknown dtype", t.name));
    }
    // Plan only files that ReadWlf accepts.
    if (t.name.size() > kMaxNameBytes) {
      return Status::BadInput(fmt::format("tensor '{:.64}...': name of {} bytes exceeds {}", t.name,
                                          t.name.size(), kMaxNameBytes));
    }
    if (t.name.find('\0') != std::string::npos) {
      return Status::BadInput(fmt::format("tensor '{}': name holds a NUL byte", t.name.c_str()));
    }
    if (t.shape.size() > kMaxShapeRank) {
      return Status::BadInput(fmt::format("tensor '{}': {} dimensions exceed {}", t.name,
                                          t.shape.size(), kMaxShapeRank));
    }
    for (uint64_t d : t.shape) {
      if (d != 0 && size > kLimit / d) {
        return Status::BadInput(fmt::format("tensor '{}': size overflows", t.name));
      }
      size *= d;
    }
    pos = AlignUp(pos, align);
    if (pos > kLimit - size) return Status::BadInput("file size overflows");
    l.tensor_offsets.push_back(pos);
    l.tensor_sizes.push_back(size);
    pos += size;
  }
  l.data_end = AlignUp(pos, 8);
  l.file_size = l.data_end + sizeof(WlfTail);
  *out = std::move(l);
  return Status::Ok();
}

std::vector<std::byte> EncodeWlfHead(const std::vector<WlfTensorSpec>& tensors,
                                     const FileLayout& layout, uint64_t flags, uint64_t checksum,
                                     uint64_t gen_spec_id, std::endian order) {
  const bool big_endian = order == std::endian::big;
  std::vector<std::byte> buf(layout.data_offset);
  WlfHeader h{};
  h.magic = kWlfMagic;
  h.version = kWlfVersion;
  h.tensor_count = tensors.size();
  h.meta_offset = sizeof(WlfHeader);
  h.data_offset = layout.data_offset;
  h.file_size = layout.file_size;
  h.flags = flags;
  h.reserved[0] = (flags & kWlfFlagChecksum) ? checksum : 0;
  h.reserved[1] = (flags & kWlfFlagGenSpec) ? gen_spec_id : 0;
  if (big_endian) Reverse(&h);
  std::memcpy(buf.data(), &h, sizeof h);

  uint64_t aux = sizeof(WlfHeader) + tensors.size() * sizeof(WlfTensorEntry);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    WlfTensorEntry e{};
    e.name_offset = aux;
    std::memcpy(buf.data() + aux, t.name.data(), t.name.size());  // NUL from the zeroed buffer
    aux += t.name.size() + 1;
    aux = AlignUp(aux, 8);
    e.shape_offset = aux;
    e.shape_count = t.shape.size();
    for (uint64_t d : t.shape) {
      if (big_endian) endian_reverse_inplace(d);
      std::memcpy(buf.data() + aux, &d, sizeof d);
      aux += sizeof d;
    }
    e.dtype = static_cast<uint32_t>(t.dtype);
    e.data_offset = layout.tensor_offsets[i];
    e.data_size = layout.tensor_sizes[i];
    if (big_endian) Reverse(&e);
    std::memcpy(buf.data() + sizeof(WlfHeader) + i * sizeof e, &e, sizeof e);
  }
  return buf;
}

WlfTail EncodeWlfTail(const FileLayout& layout, std::endian order) {
  WlfTail tail{kWlfTailMagic, layout.file_size};
  if (order == std::endian::big) Reverse(&tail);
  return tail;
}

void SwapWlfElements(WlfDType dtype, std::byte* data, size_t len) {
  uint64_t size = 1;
  WlfDTypeInfo(static_cast<uint32_t>(dtype), nullptr, &size);
  switch (size) {
    case 2:
      ReverseElements<uint16_t>(data, len / 2);
      break;
    case 4:
      ReverseElements<uint32_t>(data, len / 4);
      break;
    case 8:
      ReverseElements<uint64_t>(data, len / 8);
      break;
    default:
      break;  // 1-byte elements have no byte order
  }
}

}  // namespace loadbench
