// GGUF, llama.cpp's format: tensors on the file's alignment (32 by default), little-endian
// only, the checksum and spec id as string key-values. A sharded model is a set of splits as
// llama.cpp's gguf-split writes them, with no index: each split carries split.* keys, and the
// first also the model's checksum.
#include <fmt/format.h>

#include "harness/gen/encoder.h"
#include "loaders/format/gguf.h"

namespace loadbench {
namespace {

// The key of a GGUF split's first file holding the model's checksum (each split's own is
// kGgufChecksumKey, over its own tensors).
constexpr const char* kGgufModelChecksumKey = "loadbench.model_xxh3_64";

// GGUF integer key-values, as llama.cpp's gguf-split writes split.* (u16, u16, i32).
GgufKv GgufU16(const std::string& key, uint16_t v) {
  return {key, 2, {std::byte(v & 0xFF), std::byte(v >> 8)}};
}
GgufKv GgufI32(const std::string& key, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  return {key,
          5,
          {std::byte(u & 0xFF), std::byte((u >> 8) & 0xFF), std::byte((u >> 16) & 0xFF),
           std::byte(u >> 24)}};
}

class Gguf final : public GenEncoder {
 public:
  Status Align(uint64_t asked, uint64_t* align) const override {
    *align = asked == 0 ? kGgufDefaultAlignment : asked;
    if (!IsPowerOfTwo(*align) || *align > (1ull << 31)) {
      return Status::BadInput(
          fmt::format("GGUF alignment {} must be a power of two of at most 2^31", *align));
    }
    return Status::Ok();
  }

  Status CheckByteOrder(std::endian order) const override {
    if (order == std::endian::big)
      return BigEndianRefused("loadbench reads little-endian GGUF only");
    return Status::Ok();
  }

  Status CheckMisalign(uint64_t misalign) const override {
    return MisalignRefused(misalign, "GGUF");
  }

  // loadbench's keys, then a split's: split.no (0-based), split.count, split.tensors.count
  // (the model's) and, in the first, the model's checksum.
  Status EncodeHead(const GenPlan& plan, const HeadOf& of, FileLayout* layout,
                    std::vector<std::byte>* head) const override {
    std::vector<GgufKv> kvs = {GgufString("general.architecture", plan.model.preset),
                               GgufString("general.name", plan.model.description),
                               GgufString(kGgufChecksumKey, fmt::format("{:016x}", of.checksum)),
                               GgufString(kGgufGenSpecKey, fmt::format("{:016x}", plan.spec_id))};
    if (!plan.shards.empty()) {
      kvs.push_back(GgufU16("split.no", static_cast<uint16_t>(of.shard)));
      kvs.push_back(GgufU16("split.count", static_cast<uint16_t>(plan.shards.size())));
      kvs.push_back(
          GgufI32("split.tensors.count", static_cast<int32_t>(plan.model.tensors.size())));
      if (of.shard == 0) {
        kvs.push_back(GgufString(kGgufModelChecksumKey, fmt::format("{:016x}", of.model_checksum)));
      }
    }
    return EncodeGgufHead(*of.tensors, kvs, static_cast<uint32_t>(plan.align), layout, head);
  }

  const char* model_checksum_key() const override { return kGgufModelChecksumKey; }
};

}  // namespace

const GenEncoder& GgufEncoder() {
  static const Gguf encoder;
  return encoder;
}

}  // namespace loadbench
