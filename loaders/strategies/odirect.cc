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
  explicit OdirectLoader(const Params& params) : how_(SpanLoadOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, O_DIRECT, &fd));
    SpanLoad how = how_;
    how.align = DirectIoAlignment(fd.get());
    how.slice_align = how.chunk;
    if (how.chunk % how.align != 0) {
      return Status::BadInput(
          fmt::format("{}: odirect: chunk={} is not a multiple of the {}-byte O_DIRECT alignment",
                      path, how.chunk, how.align));
    }
    return LoadSpan(fd.get(), path, table, how, &region_, views);
  }

  nlohmann::json Details() const override { return {{"region_bytes", region_.size()}}; }

 private:
  const SpanLoad how_;
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
