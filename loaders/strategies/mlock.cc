// mlock: the whole file mapped PROT_READ and MAP_PRIVATE, and its data area locked with
// mlock(2), which reads every page in before Load returns and keeps it resident, out of reach
// of reclaim, until the mapping is unmapped with the loader.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"
#include "loaders/base/units.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

// What a lock must leave of MemAvailable: room for the worker, the harness and the kernel's own
// reserves. Locked pages cannot be reclaimed, so past this point the OOM killer, not this run,
// would decide what dies.
constexpr uint64_t kMemAvailableMargin = uint64_t{512} << 20;

// Raises the soft RLIMIT_MEMLOCK towards `need` bytes when it is below: to unlimited where the
// process may raise its hard limit (CAP_SYS_RESOURCE), else to the hard limit. Whether the
// process may is found by trying, not guessed from its uid. Returns the limits now in force.
rlimit RaiseMemlockLimit(uint64_t need) {
  rlimit lim{};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return lim;
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  if (::setrlimit(RLIMIT_MEMLOCK, &unlimited) != 0) {
    const rlimit to_hard{lim.rlim_max, lim.rlim_max};
    ::setrlimit(RLIMIT_MEMLOCK, &to_hard);
  }
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  return lim;
}

class MlockLoader final : public Loader {
 public:
  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    // mlock touches every page, so a file that shrank since validation must not be mapped.
    LB_RETURN_IF_ERROR(MapWholeFile(path, table.file_size, 0, writable_, &mapping_));
    const uint64_t size = mapping_.size();
    if (table.data_offset < size) LB_RETURN_IF_ERROR(LockDataArea(path, table.data_offset));
    for (const auto& t : table.tensors) views->emplace_back(mapping_.data() + t.offset, t.size);
    return Status::Ok();
  }

  nlohmann::json Details() const override { return {{"locked_bytes", locked_bytes_}}; }

 private:
  Status LockDataArea(const std::string& path, uint64_t data_offset) {
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = data_offset / page * page;  // mlock wants a page-aligned start
    // What the kernel counts against the limit: whole pages.
    const uint64_t need = (mapping_.size() - start + page - 1) / page * page;

    const rlimit lim = RaiseMemlockLimit(need);
    const std::optional<uint64_t> available = MeminfoBytes("MemAvailable");
    if (!available) {
      return Status::IOError(fmt::format(
          "{}: cannot tell whether locking {} fits in memory: /proc/meminfo has no MemAvailable",
          path, FormatBytes(need)));
    }
    if (need + kMemAvailableMargin > *available) {
      return Status::IOError(fmt::format(
          "{}: refusing to mlock {} with {} MemAvailable: locked pages cannot be reclaimed, and "
          "less than {} would be left",
          path, FormatBytes(need), FormatBytes(*available), FormatBytes(kMemAvailableMargin)));
    }

    // The call itself tells whether the limit binds: with CAP_IPC_LOCK it is not enforced, and
    // without it the kernel refuses before reading a page (EPERM for a zero limit, else ENOMEM).
    // The system call, not the libc wrapper: the sanitizer runtimes intercept mlock() and make
    // it a no-op that reports success, which would leave a sanitized build locking nothing.
    if (::syscall(SYS_mlock, mapping_.data() + start, mapping_.size() - start) != 0) {
      const int err = errno;
      // Below `need` the soft limit is the hard one: RaiseMemlockLimit went as far as it may.
      const bool over_limit = lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need;
      if (over_limit && (err == ENOMEM || err == EPERM)) {
        return Status::Unsupported(fmt::format(
            "{}: RLIMIT_MEMLOCK is {} (hard limit), the data area needs {}; raise it with "
            "ulimit -l or run as root",
            path, FormatBytes(lim.rlim_cur), FormatBytes(need)));
      }
      return Status::IOErrorFromErrno(fmt::format("{}: mlock of {} ({} bytes) failed ({})", path,
                                                  FormatBytes(need), need, ::strerrorname_np(err)),
                                      err);
    }
    locked_bytes_ = need;
    return Status::Ok();
  }

  Mapping mapping_;  // unmapping it also unlocks it
  uint64_t locked_bytes_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mlock",
    .summary = "mmap PROT_READ, MAP_PRIVATE, then mlock the data area: every page read in and "
               "pinned before Load returns",
    .options = {},
    .make = [](const Params&) -> std::unique_ptr<Loader> {
      return std::make_unique<MlockLoader>();
    },
    .flags = kEager | kMapsFile,
}));

}  // namespace loadbench
