// mmap: the whole file mapped PROT_READ and MAP_PRIVATE with no advice; tensors are views into
// the mapping and every page arrives by a fault when the consumer first touches it, with the
// kernel's default read-ahead. Its options make llama.cpp's own loader a row of its own
// (src/llama-mmap.cpp: MAP_SHARED, POSIX_FADV_SEQUENTIAL on the file, and when prefetching
// MAP_POPULATE plus POSIX_MADV_WILLNEED over the whole mapping):
// `mmap:share=shared:fadvise=sequential:populate=on`.
#include "loaders/strategies/mmap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

namespace loadbench {

Status MmapLoader::Load(const std::string& path, const TensorTable& table,
                        std::vector<TensorBytes>* views) {
  if (options_.shared && writable_) {
    return Status::Unsupported(fmt::format(
        "{}: share=shared maps the file MAP_SHARED, where a write would change the file itself; "
        "an in-place transform needs share=private (or place=separate)",
        path));
  }
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  uint64_t size;
  LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
  if (size != table.file_size) {
    return Status::BadInput(fmt::format("{}: file changed size since it was validated ({} -> {})",
                                        path, table.file_size, size));
  }
  if (size == 0) return Status::BadInput(fmt::format("{}: cannot map an empty file", path));
  if (options_.fadvise_sequential) {
    // Set on the open file, which the mapping keeps: its faults read ahead by the doubled window.
    if (int err = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL); err != 0) {
      return Status::FromErrno(fmt::format("{}: posix_fadvise(POSIX_FADV_SEQUENTIAL)", path), err);
    }
  }
  if (options_.shared) {
    void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED | options_.map_flags, fd.get(), 0);
    if (addr == MAP_FAILED) return Status::FromErrno(fmt::format("{}: mmap", path), errno);
    mapping_ = Mapping(addr, size);
  } else {
    LB_RETURN_IF_ERROR(
        MapPrivate(fd.get(), path, 0, size, options_.map_flags, writable_, &mapping_));
  }
  if (options_.willneed_all) {
    if (int err = ::posix_madvise(mapping_.mutable_data(), size, POSIX_MADV_WILLNEED); err != 0) {
      return Status::FromErrno(fmt::format("{}: posix_madvise(POSIX_MADV_WILLNEED)", path), err);
    }
  }
  if (options_.advice >= 0 && table.data_offset < size) {
    // madvise wants a page-aligned start; the data area of every format starts on one or is
    // rounded down to one.
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = table.data_offset / page * page;
    if (::madvise(mapping_.mutable_data() + start, size - start, options_.advice) != 0) {
      const int err = errno;
      if (err == EINVAL) {
        return Status::Unsupported(
            fmt::format("{}: madvise({}) refused with EINVAL: this kernel does not know it", path,
                        options_.advice_name));
      }
      return Status::FromErrno(fmt::format("{}: madvise({})", path, options_.advice_name), err);
    }
  }
  for (const auto& t : table.tensors) views->emplace_back(mapping_.data() + t.offset, t.size);
  return Status::Ok();
}

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mmap",
    .summary = "mmap PROT_READ, MAP_PRIVATE, no advice; pages fault in as the consumer reads "
               "(options: llama.cpp's MAP_SHARED, FADV_SEQUENTIAL and prefetch)",
    .options =
        {
            {"share",
             OptionSpec::Kind::kChoice,
             "private",
             "MAP_PRIVATE, or MAP_SHARED as llama.cpp maps (no writable views: no in-place "
             "transform)",
             {"private", "shared"}},
            {"fadvise",
             OptionSpec::Kind::kChoice,
             "none",
             "posix_fadvise on the file before mapping it (sequential: POSIX_FADV_SEQUENTIAL)",
             {"none", "sequential"}},
            {"populate", OptionSpec::Kind::kChoice, "off",
             "llama.cpp's prefetch: MAP_POPULATE, then posix_madvise(POSIX_MADV_WILLNEED) over "
             "the whole mapping",
             kOnOff},
        },
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      MmapOptions o;
      o.shared = p.Choice("share") == "shared";
      o.fadvise_sequential = p.Choice("fadvise") == "sequential";
      if (p.On("populate")) {
        o.map_flags = MAP_POPULATE;
        o.willneed_all = true;
      }
      return std::make_unique<MmapLoader>(o);
    },
    .flags = kMapsFile,
}));

}  // namespace loadbench
