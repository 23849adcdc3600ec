// WLF, loadbench's own format (docs/formats.md): tensors on their alignment (4096 by default),
// either byte order, the checksum and spec id in the header's reserved words, and a tail
// sentinel after the data.
#include <fmt/format.h>

#include "harness/gen/encoder.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

class Wlf final : public GenEncoder {
 public:
  Status Align(uint64_t asked, uint64_t* align) const override {
    *align = asked == 0 ? 4096 : asked;
    if (!IsPowerOfTwo(*align) || *align < kWlfMinTensorAlign) {
      return Status::BadInput(fmt::format("WLF alignment {} must be a power of two of at least {}",
                                          *align, kWlfMinTensorAlign));
    }
    return Status::Ok();
  }

  Status CheckByteOrder(std::endian) const override { return Status::Ok(); }

  Status CheckMisalign(uint64_t misalign) const override {
    return MisalignRefused(misalign, "WLF");
  }

  Status EncodeHead(const GenPlan& plan, const HeadOf& of, FileLayout* layout,
                    std::vector<std::byte>* head) const override {
    LB_RETURN_IF_ERROR(PlanWlf(*of.tensors, plan.align, layout));
    *head = EncodeWlfHead(*of.tensors, *layout, kWlfFlagChecksum | kWlfFlagGenSpec, of.checksum,
                          plan.spec_id, plan.byte_order);
    return Status::Ok();
  }

  Status WriteTail(const GenPlan& plan, const FileLayout& layout, int fd,
                   const std::string& path) const override {
    const WlfTail tail = EncodeWlfTail(layout, plan.byte_order);
    return PwriteExact(fd, path, &tail, sizeof tail, layout.data_end);
  }
};

}  // namespace

const GenEncoder& WlfEncoder() {
  static const Wlf encoder;
  return encoder;
}

}  // namespace loadbench
