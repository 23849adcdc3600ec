// safetensors: a JSON header and the tensors one after another, with no alignment of their own
// (a misalignment, where asked, moves the whole data area); little-endian by definition. The
// checksum and spec id are in the header's __metadata__.
#include <fmt/format.h>

#include "harness/gen/encoder.h"
#include "loaders/format/safetensors.h"

namespace loadbench {
namespace {

class Safetensors final : public GenEncoder {
 public:
  Status Align(uint64_t asked, uint64_t* align) const override {
    *align = asked;
    if (asked != 0) {
      return Status::BadInput(
          "safetensors has no tensor alignment (tensors follow one another after the "
          "header); leave out --align");
    }
    return Status::Ok();
  }

  Status CheckByteOrder(std::endian order) const override {
    if (order == std::endian::big) {
      return BigEndianRefused("safetensors is little-endian by definition");
    }
    return Status::Ok();
  }

  Status CheckMisalign(uint64_t) const override { return Status::Ok(); }

  Status EncodeHead(const GenPlan& plan, const HeadOf& of, FileLayout* layout,
                    std::vector<std::byte>* head) const override {
    return EncodeSafetensorsHead(*of.tensors,
                                 {{kSafetensorsChecksumKey, fmt::format("{:016x}", of.checksum)},
                                  {kSafetensorsGenSpecKey, fmt::format("{:016x}", plan.spec_id)}},
                                 layout, head, plan.misalign);
  }
};

}  // namespace

const GenEncoder& SafetensorsEncoder() {
  static const Safetensors encoder;
  return encoder;
}

}  // namespace loadbench
