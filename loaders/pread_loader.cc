// pread straight into one buffer per tensor, in chunk-sized calls: fread's path without stdio
// and without the temporary copy, so that the two side by side price the copy.
#include <memory>

#include "loaders/base/destination.h"
#include "loaders/base/file_io.h"
#include "loaders/loader.h"

namespace loadbench {
namespace {

class PreadLoader final : public Loader {
 public:
  explicit PreadLoader(const Params& params)
      : chunk_bytes_(params.Bytes("chunk")), kind_(BufferKindOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
    LB_RETURN_IF_ERROR(buffers_.Allocate(kind_, table, path));
    for (size_t i = 0; i < table.tensors.size(); ++i) {
      const TensorInfo& t = table.tensors[i];
      std::byte* dst = buffers_.at(i);
      for (uint64_t done = 0; done < t.size;) {
        const uint64_t len = std::min(chunk_bytes_, t.size - done);
        LB_RETURN_IF_ERROR(PreadExact(fd.get(), path, dst + done, len, t.offset + done));
        done += len;
      }
      views->emplace_back(dst, t.size);
    }
    return Status::Ok();
  }

 private:
  uint64_t chunk_bytes_;
  BufferKind kind_;
  TensorBuffers buffers_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "pread",
    .summary = "pread straight into one buffer per tensor, no temporary copy",
    .options = {{"chunk", OptionSpec::Kind::kBytes, "1MiB", "bytes per pread call"},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<PreadLoader>(p);
    },
    .flags = kEager | kAllocates,
}));

}  // namespace loadbench
