// WLF, the mappable weight format: the file's bytes are the in-memory layout, so a load only
// claims them. Every integer is fixed-width; every reference is a file offset.
//
//   [0, 64)                  header (WlfHeader)
//   [meta_offset, +48*n)     tensor table (WlfTensorEntry), meta_offset == 64
//   [.., data_offset)        aux area: tensor names (NUL-terminated) and shapes (u64 arrays)
//   [data_offset, ..)        data area, data_offset % 4096 == 0; every tensor aligned to the
//                            file's alignment (>= 64, a power of two); padding is zero bytes
//   [file_size - 16, ..)     tail sentinel (WlfTail)
//
// Byte order: a file is little-endian unless its magic reads byte-swapped (kWlfMagicSwapped),
// in which case it is big-endian throughout: every integer field of the header, the tensor
// table, the shape arrays and the tail, and every tensor element (each element of 2, 4 or 8
// bytes is stored byte-swapped; 1-byte elements are the same in both). Big-endian files exist
// to price the byte swap a consumer on a little-endian machine must then do.
//
// flags bit 0 (kWlfFlagChecksum): reserved[0] holds the xxh3-64 of all tensor bytes in table
// order, as stored (so for a big-endian file, of the swapped bytes: a load verifies exactly
// the bytes it delivered). flags bit 1 (kWlfFlagGenSpec): reserved[1] holds the xxh3-64 of the
// generator's spec string, so a generator can recognise a file it already wrote. Readers
// ignore unknown flags.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loaders/base/byte_source.h"
#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

inline constexpr uint32_t kWlfMagic = 0x57454947;         // "GIEW" on disk, reads as "WEIG"
inline constexpr uint32_t kWlfMagicSwapped = 0x47494557;  // the magic of a big-endian file
inline constexpr uint32_t kWlfVersion = 1;
inline constexpr uint64_t kWlfTailMagic = 0x4C494154464C5757;  // "WWLFTAIL"
inline constexpr uint64_t kWlfFlagChecksum = 1u << 0;
inline constexpr uint64_t kWlfFlagGenSpec = 1u << 1;
inline constexpr uint64_t kWlfDataAlign = 4096;  // the data area starts on this boundary
inline constexpr uint64_t kWlfMinTensorAlign = 64;

struct WlfHeader {
  uint32_t magic;
  uint32_t version;
  uint64_t tensor_count;
  uint64_t meta_offset;
  uint64_t data_offset;
  uint64_t file_size;
  uint64_t flags;
  uint64_t reserved[2];  // [0] checksum, [1] generator spec id; see the flags above
};
static_assert(sizeof(WlfHeader) == 64, "WLF header is 64 bytes");

struct WlfTensorEntry {
  uint64_t name_offset;
  uint32_t dtype;
  uint32_t pad;
  uint64_t shape_offset;
  uint64_t shape_count;
  uint64_t data_offset;
  uint64_t data_size;
};
static_assert(sizeof(WlfTensorEntry) == 48, "WLF tensor entry is 48 bytes");

struct WlfTail {
  uint64_t magic;      // kWlfTailMagic
  uint64_t file_size;  // equals the header's file_size
};
static_assert(sizeof(WlfTail) == 16, "WLF tail is 16 bytes");

// WLF dtype codes. Stable: they are stored in files.
enum class WlfDType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kF64 = 3,
  kI8 = 4,
  kU8 = 5,
  kI16 = 6,
  kU16 = 7,
  kI32 = 8,
  kU32 = 9,
  kI64 = 10,
  kU64 = 11,
  kBool = 12,
  kF8E4M3 = 13,
  kF8E5M2 = 14,
};
inline constexpr uint32_t kWlfDTypeCount = 15;

// Name ("bf16") and element size of a dtype code; false for an unknown code.
bool WlfDTypeInfo(uint32_t code, std::string* name, uint64_t* elem_size);
// Code for a name; false when the name is unknown.
bool WlfDTypeFromName(const std::string& name, WlfDType* out);

// Parses and validates the WLF file `src` reads, of either byte order (table.big_endian and
// header["byte_order"] say which). Every field is checked with overflow-safe bounds before it
// is used; see the file comment for the layout.
Status ReadWlf(const ByteSource& src, TensorTable* out);

// ---- Writing ----

struct WlfTensorSpec {
  std::string name;
  WlfDType dtype;
  std::vector<uint64_t> shape;
};

// Plans the layout of `tensors` (in this order) with each tensor aligned to `align`.
// kBadInput when align is not a power of two >= 64 or a size overflows.
Status PlanWlf(const std::vector<WlfTensorSpec>& tensors, uint64_t align, FileLayout* out);

// The bytes [0, data_offset): header, tensor table, aux area, zero padding, every integer in
// `order`.
std::vector<std::byte> EncodeWlfHead(const std::vector<WlfTensorSpec>& tensors,
                                     const FileLayout& layout, uint64_t flags, uint64_t checksum,
                                     uint64_t gen_spec_id, std::endian order = std::endian::little);
// The 16 bytes at data_end, in `order`: write them as they are.
WlfTail EncodeWlfTail(const FileLayout& layout, std::endian order = std::endian::little);

// Byte-swaps, in place, each whole element of `dtype` in [data, data + len): turns the
// little-endian elements of a tensor into the big-endian ones of a big-endian file, and back.
// 1-byte dtypes are left as they are.
void SwapWlfElements(WlfDType dtype, std::byte* data, size_t len);

}  // namespace loadbench
