// mmap + MADV_POPULATE_READ (Linux 5.14+): populate the page tables of the data area, reading
// the file as needed, in one call that reports errors instead of raising SIGBUS later.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "loaders/strategies/mmap.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 uapi; older libc headers lack the name
#endif

namespace loadbench {
namespace {

// Asks the running kernel, on one anonymous page, whether it knows the advice.
std::string PopulateReadUnsupportedReason() {
  void* p = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return fmt::format("probe mmap failed: {}", std::strerror(errno));
  const int rc = ::madvise(p, 4096, MADV_POPULATE_READ);
  const int err = errno;
  ::munmap(p, 4096);
  if (rc == 0) return "";
  if (err == EINVAL) return "madvise(MADV_POPULATE_READ) needs Linux 5.14 or later";
  return fmt::format("madvise(MADV_POPULATE_READ) probe failed: {}", std::strerror(err));
}

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mmap_populate_read",
    .summary = "mmap plus madvise(MADV_POPULATE_READ) over the data area (Linux 5.14+)",
    .options = {},
    .make = [](const Params&) -> std::unique_ptr<Loader> {
      return std::make_unique<MmapLoader>(0, MADV_POPULATE_READ, "MADV_POPULATE_READ");
    },
    .flags = kEager | kMapsFile,
    .unsupported_reason = PopulateReadUnsupportedReason,
}));

}  // namespace loadbench
