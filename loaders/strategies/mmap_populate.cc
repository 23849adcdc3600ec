// mmap with MAP_POPULATE: the kernel reads the whole file and fills the page tables inside the
// mmap call, so that the consumer meets no fault at all (llama.cpp's default path).
#include <sys/mman.h>

#include "loaders/strategies/mmap.h"

namespace loadbench {

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mmap_populate",
    .summary = "mmap with MAP_POPULATE: every page read and mapped before mmap returns",
    .options = {},
    .make = [](const Params&) -> std::unique_ptr<Loader> {
      return std::make_unique<MmapLoader>(MAP_POPULATE, -1, "none");
    },
    .flags = kEager | kMapsFile,
}));

}  // namespace loadbench
