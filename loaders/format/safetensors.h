// safetensors, as huggingface/safetensors writes it: an 8-byte little-endian header length N,
// N bytes of JSON, then the data area. Each JSON entry but `__metadata__` is a tensor with its
// dtype, shape and data_offsets [begin, end) relative to the data area at byte 8 + N. Writers
// since v0.3.1 pad the JSON with spaces so that 8 + N is a multiple of 8; older files are not
// padded, so their tensors may sit at any byte offset.
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

// The reference reader's limit on N.
inline constexpr uint64_t kSafetensorsMaxHeader = 100ull << 20;

// `__metadata__` keys loadbench writes and reads: the xxh3-64 of all tensor bytes in table
// order, and the id of the generator spec that wrote the file (both 16 hex digits).
inline constexpr const char* kSafetensorsChecksumKey = "loadbench.xxh3_64";
inline constexpr const char* kSafetensorsGenSpecKey = "loadbench.gen_spec";

// True when `head` (the file's first bytes) can start a safetensors file: the JSON begins
// with '{' right after the 8-byte length.
bool LooksLikeSafetensors(const unsigned char* head, size_t len);

// Parses and validates the safetensors file `src` reads. The table lists tensors in the order
// of their data (header key order carries no meaning: writers sort by dtype size).
Status ReadSafetensors(const ByteSource& src, TensorTable* out);

// The safetensors dtype name ("BF16") of a WLF dtype; every WLF dtype has one.
std::string SafetensorsDTypeName(WlfDType dtype);

// Plans a file of `tensors` in this order, contiguous as the reference writer lays them out,
// and encodes its head: length, compact JSON with `metadata` first, space padding to a multiple
// of 8. With `misalign` (1 to 63) the padding instead makes the data area start `misalign`
// bytes past a 64-byte boundary, as an unpadded file's may: tensors whose sizes are multiples
// of 64 then all start there. kBadInput for misalign above 63. The head's size depends on the
// metadata only through its length.
Status EncodeSafetensorsHead(const std::vector<WlfTensorSpec>& tensors,
                             const std::vector<std::pair<std::string, std::string>>& metadata,
                             FileLayout* layout, std::vector<std::byte>* head,
                             uint64_t misalign = 0);

}  // namespace loadbench
