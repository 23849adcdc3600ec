// mmap: the whole file mapped PROT_READ and MAP_PRIVATE with no advice; tensors are views into
// the mapping and every page arrives by a fault when the consumer first touches it, with the
// kernel's default read-ahead.
#include "loaders/mmap_loader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

namespace loadbench {

Status MmapLoader::Load(const std::string& path, const TensorTable& table,
                        std::vector<TensorBytes>* views) {
  LB_RETURN_IF_ERROR(MapWholeFile(path, table.file_size, map_flags_, writable_, &mapping_));
  const uint64_t size = mapping_.size();
  if (advice_ >= 0 && table.data_offset < size) {
    // madvise wants a page-aligned start; the data area of every format starts on one or is
    // rounded down to one.
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = table.data_offset / page * page;
    if (::madvise(const_cast<std::byte*>(mapping_.data()) + start, size - start, advice_) != 0) {
      const int err = errno;
      if (err == EINVAL) {
        return Status::Unsupported(
            fmt::format("{}: madvise({}) refused with EINVAL: this kernel does not know it", path,
                        advice_name_));
      }
      return Status::FromErrno(fmt::format("{}: madvise({})", path, advice_name_), err);
    }
  }
  for (const auto& t : table.tensors) views->emplace_back(mapping_.data() + t.offset, t.size);
  return Status::Ok();
}

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mmap",
    .summary = "mmap PROT_READ, MAP_PRIVATE, no advice; pages fault in as the consumer reads",
    .options = {},
    .make = [](const Params&) -> std::unique_ptr<Loader> {
      return std::make_unique<MmapLoader>(0, -1, "none");
    },
    .flags = kMapsFile,
}));

}  // namespace loadbench
