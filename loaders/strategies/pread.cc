// pread straight into one buffer per tensor, in chunk-sized calls: fread's path without stdio
// and without the temporary copy, so that the two side by side price the copy.
#include <memory>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

class PreadLoader final : public ChunkedCopy {
 public:
  using ChunkedCopy::ChunkedCopy;

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
    LB_RETURN_IF_ERROR(buffers_.Allocate(kind_, table, path));
    auto read = [&](const TensorInfo&, uint64_t at, std::byte* dst, uint64_t len) {
      return PreadExact(fd.get(), path, dst, len, at);
    };
    return buffers_.Fill(table, chunk_bytes_, read, views);
  }
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
