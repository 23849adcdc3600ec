// mmap + MADV_SEQUENTIAL: as mmap, with the data area advised sequential, so the kernel reads
// ahead aggressively and the disk works while the consumer is still on earlier pages.
#include <sys/mman.h>

#include "loaders/strategies/mmap.h"

namespace loadbench {

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mmap_seq",
    .summary = "mmap plus madvise(MADV_SEQUENTIAL) over the data area",
    .options = {},
    .make = [](const Params&) -> std::unique_ptr<Loader> {
      return std::make_unique<MmapLoader>(0, MADV_SEQUENTIAL, "MADV_SEQUENTIAL");
    },
    .flags = kMapsFile,
}));

}  // namespace loadbench
