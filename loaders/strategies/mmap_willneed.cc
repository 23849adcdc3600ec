// mmap + MADV_WILLNEED: as mmap, with the kernel asked to start reading the whole data area at
// once, so that I/O runs ahead of the consumer without a thread of our own.
#include <sys/mman.h>

#include "loaders/strategies/mmap.h"

namespace loadbench {

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mmap_willneed",
    .summary = "mmap plus madvise(MADV_WILLNEED) over the data area: read-ahead of all of it",
    .options = {},
    .make = [](const Params&) -> std::unique_ptr<Loader> {
      return std::make_unique<MmapLoader>(0, MADV_WILLNEED, "MADV_WILLNEED");
    },
    .flags = kMapsFile,
}));

}  // namespace loadbench
