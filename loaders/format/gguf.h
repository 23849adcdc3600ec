// GGUF, ggml's format, as llama.cpp's tools and gguf-py write it: magic "GGUF", a version,
// the tensor and key-value counts, the key-value metadata, one info per tensor (name, dims with
// the innermost first, ggml type, offset), then the data section at the next multiple of
// general.alignment (default 32). Versions 2 and 3 use 64-bit counts, lengths and dims;
// version 1 used 32-bit ones and is read too.
//
// Rules where readers differ, fixed here:
// - A duplicated key: the first occurrence counts (as gguf-py's reader keeps it); inspect lists
//   the later ones under `duplicate_keys`. llama.cpp refuses such files.
// - Tensor offsets need not follow one another as llama.cpp requires; each must be a multiple
//   of the alignment, inside the file, and overlap no other tensor.
// - A quantized tensor whose rows are not whole blocks (written by 2023 llama.cpp; today's
//   refuses it) is read when its element count is a whole number of blocks: its bytes are
//   well defined. inspect counts such tensors under `rows_across_blocks`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loaders/base/byte_source.h"
#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"
#include "loaders/format/wlf.h"

namespace loadbench {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" as a little-endian u32
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxDims = 4;  // GGML_MAX_DIMS

// String keys loadbench writes and reads: the xxh3-64 of all tensor bytes in table order, and
// the id of the generator spec that wrote the file (both 16 hex digits).
inline constexpr const char* kGgufChecksumKey = "loadbench.xxh3_64";
inline constexpr const char* kGgufGenSpecKey = "loadbench.gen_spec";

// Parses and validates the GGUF file `src` reads; the table keeps the file's tensor order.
Status ReadGguf(const ByteSource& src, TensorTable* out);

// The ggml type code of a WLF dtype; false when GGUF has none (u8 and the other unsigned
// types, bool, f8).
bool GgufTypeFor(WlfDType dtype, uint32_t* code);

// One key-value for the writer: the value type and the value's encoded bytes (after the type).
struct GgufKv {
  std::string key;
  uint32_t type;  // GGUF value type: 4 u32, 5 i32, 6 f32, 8 string, 9 array, ...
  std::vector<std::byte> value;
};
GgufKv GgufString(const std::string& key, const std::string& value);
GgufKv GgufStringArray(const std::string& key, const std::vector<std::string>& values);
// An array of a fixed-size type (`elem_type` as above) from its elements' raw bytes.
GgufKv GgufArray(const std::string& key, uint32_t elem_type, uint64_t count,
                 const std::vector<std::byte>& elements);

// Plans a file of `tensors` in this order, each aligned to `alignment` and padded after (the
// last one too, as the reference writers do), and encodes its head: the header,
// general.alignment (u32) and then `kvs`, the tensor infos, zero padding to the data section.
// The head's size depends on the values only through their encoded lengths.
Status EncodeGgufHead(const std::vector<WlfTensorSpec>& tensors, const std::vector<GgufKv>& kvs,
                      uint32_t alignment, FileLayout* layout, std::vector<std::byte>* head);

}  // namespace loadbench
