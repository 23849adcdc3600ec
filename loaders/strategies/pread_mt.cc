// Multi-threaded pread: T threads each read one contiguous slice of the tensor span in
// chunk-sized preads into one destination buffer, so that several requests are in flight and
// the first-touch faults of the destination are taken on several cores.
#include <unistd.h>

#include <memory>
#include <string>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/blocks/span_reader.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

class PreadMtLoader final : public Loader {
 public:
  explicit PreadMtLoader(const Params& params) : how_(SpanLoadOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
    return LoadSpan(fd.get(), path, table, how_, &region_, views);
  }

 private:
  const SpanLoad how_;
  Region region_;
};

std::string Cores() { return std::to_string(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))); }

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "pread_mt",
    .summary = "T threads, each preading one contiguous slice of the tensor data, into one buffer",
    .options = {{"threads",
                 OptionSpec::Kind::kInt,
                 Cores(),
                 "reader threads (default: the cores of this machine)",
                 {},
                 1,
                 1024},
                {"chunk", OptionSpec::Kind::kBytes, "8MiB", "bytes per pread call"},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<PreadMtLoader>(p);
    },
    .flags = kEager | kAllocates | kThreads,
}));

}  // namespace loadbench
