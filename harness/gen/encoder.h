// Inside harness/gen: the formats the generator writes, behind one interface. Each format's
// encoder (wlf_encoder.cc, safetensors_encoder.cc, gguf_encoder.cc) checks the options only it
// constrains, encodes a file's head and what follows the data, and says where a sharded model
// keeps its checksum; FindEncoder picks one by name from the table in encoder.cc.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/gen/generator.h"
#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"
#include "loaders/format/wlf.h"

namespace loadbench {

// The file whose head is encoded: its tensors (the model's, or a shard's) and the checksum of
// their bytes; in a sharded model, which shard it is and, for the first, the model's checksum
// (a GGUF split stores both; the other formats keep the model's in the index).
struct HeadOf {
  const std::vector<WlfTensorSpec>* tensors = nullptr;
  uint64_t checksum = 0;
  size_t shard = 0;
  uint64_t model_checksum = 0;
};

class GenEncoder {
 public:
  virtual ~GenEncoder() = default;

  // The tensor alignment for `asked` (0: the format's default), or kBadInput saying why the
  // format cannot have it.
  virtual Status Align(uint64_t asked, uint64_t* align) const = 0;
  // kBadInput where the format cannot be written in `order`.
  virtual Status CheckByteOrder(std::endian order) const = 0;
  // kBadInput where the format cannot start its tensors `misalign` (1 to 63) bytes past a
  // 64-byte boundary.
  virtual Status CheckMisalign(uint64_t misalign) const = 0;

  // The head of a file of `plan` holding `of`, and its layout. Every format stores the
  // checksums and spec id at fixed width, so the head's size does not depend on their values
  // and can be planned before the data is written.
  virtual Status EncodeHead(const GenPlan& plan, const HeadOf& of, FileLayout* layout,
                            std::vector<std::byte>* head) const = 0;
  // What follows the data area of a finished file, written into `fd` (named `path` in
  // errors): WLF's tail sentinel; nothing in the other formats.
  virtual Status WriteTail(const GenPlan& plan, const FileLayout& layout, int fd,
                           const std::string& path) const;

  // The key under which a sharded model's first file holds the model's checksum (GGUF, whose
  // splits have no index); nullptr where the model's index holds it (safetensors, WLF).
  virtual const char* model_checksum_key() const { return nullptr; }
  // Whether a sharded model has an index file: NAME.EXT.index.json.
  bool indexed() const { return model_checksum_key() == nullptr; }
};

// The encoder of `format` ("wlf", "safetensors", "gguf"), or nullptr.
const GenEncoder* FindEncoder(const std::string& format);
// The formats' names as a choice for messages: "wlf, safetensors or gguf".
std::string EncoderNames();

// The encoders, each in its own file; the table in encoder.cc names them.
const GenEncoder& WlfEncoder();
const GenEncoder& SafetensorsEncoder();
const GenEncoder& GgufEncoder();

// Writes the head of a finished file of `layout` (into `fd`, named `path` in errors), and
// what follows its data area. The head holds the checksum, so it is written last; its size
// does not depend on it, which is checked.
Status WriteHead(const GenEncoder& encoder, const GenPlan& plan, const HeadOf& of,
                 const FileLayout& layout, int fd, const std::string& path);

// The refusals the encoders share: big-endian is WLF's only (`why` the format's reason), and a
// misalignment safetensors' only (`format` as messages name it: "WLF", "GGUF").
Status BigEndianRefused(const char* why);
Status MisalignRefused(uint64_t misalign, const char* format);

inline bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace loadbench
