// O_DIRECT: read the tensor span, widened to the device's alignment, straight from the device
// into an aligned buffer, bypassing the page cache; tensors are views into it, so tensor
// boundaries need no alignment of their own.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/blocks/span_reader.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

class OdirectLoader final : public Loader {
 public:
  explicit OdirectLoader(const Params& params)
      : threads_(static_cast<unsigned>(params.Int("threads"))),
        chunk_bytes_(params.Bytes("chunk")),
        kind_(BufferKindOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, O_DIRECT, &fd));
    const uint64_t align = DirectIoAlignment(fd.get());
    if (chunk_bytes_ % align != 0) {
      return Status::BadInput(
          fmt::format("{}: odirect: chunk={} is not a multiple of the {}-byte O_DIRECT alignment",
                      path, chunk_bytes_, align));
    }
    return LoadSpan(fd.get(), path, table,
                    {.threads = threads_,
                     .chunk = chunk_bytes_,
                     .align = align,
                     .slice_align = chunk_bytes_,
                     .kind = kind_},
                    &region_, views);
  }

  nlohmann::json Details() const override { return {{"region_bytes", region_.size()}}; }

 private:
  unsigned threads_;
  uint64_t chunk_bytes_;
  BufferKind kind_;
  Region region_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "odirect",
    .summary = "O_DIRECT preads of the aligned tensor span into one aligned buffer, no page cache",
    .options = {{"threads",
                 OptionSpec::Kind::kInt,
                 "1",
                 "reader threads, each with one contiguous slice",
                 {},
                 1,
                 1024},
                {"chunk", OptionSpec::Kind::kBytes, "1MiB",
                 "bytes per read; a multiple of the O_DIRECT alignment (4 KiB here)"},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<OdirectLoader>(p);
    },
    .flags = kEager | kAllocates | kDirectIO | kThreads,
}));

}  // namespace loadbench
