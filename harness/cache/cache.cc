#include "harness/cache/cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "loaders/base/units.h"

#include "harness/cache/cache_internal.h"
#include "harness/cache/served.h"
#include "loaders/base/file_io.h"
#include "loaders/remote/source.h"
#include "loaders/remote/url.h"

// cachestat(2), Linux 6.5+. glibc 2.36 has no wrapper and may lack the number; 451 is the same
// on every architecture that uses the generic syscall table, x86_64 included.
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

namespace loadbench {
namespace {

constexpr uint64_t kResidencyUnit = 4096;  // Residency counts 4 KiB pages, whatever PAGE_SIZE is
constexpr size_t kMincoreChunk = size_t{1} << 30;  // map at most 1 GiB at a time
constexpr size_t kWarmBuffer = size_t{4} << 20;

// Mirrors of the kernel's struct cachestat_range and struct cachestat (include/uapi/linux/mman.h),
// declared here so that the build does not depend on the installed kernel headers.
struct CachestatRange {
  uint64_t off;
  uint64_t len;
};
struct CachestatResult {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};

uint64_t PageSize() {
  static const uint64_t page = [] {
    long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return page;
}

// Kernel pages of PAGE_SIZE to Residency's 4 KiB units, capped at the file's page count (the
// last, partial page counts as one).
uint64_t ToResidencyPages(uint64_t kernel_pages, uint64_t total_pages) {
  uint64_t per = std::max<uint64_t>(1, PageSize() / kResidencyUnit);
  if (kernel_pages >= total_pages) return total_pages;  // also rules out overflow below
  return std::min(kernel_pages * per, total_pages);
}

bool CachestatRefused(int err) {
  // ENOSYS: the kernel predates 6.5. EPERM: a seccomp filter refuses the unknown syscall.
  return err == ENOSYS || err == EPERM;
}

int RawCachestat(int fd, CachestatRange* range, CachestatResult* result) {
  return static_cast<int>(::syscall(__NR_cachestat, fd, range, result, 0U));
}

// One cachestat call over the whole file; false with *err = errno on failure.
bool CachestatWhole(int fd, CachestatResult* result, int* err) {
  CachestatRange range{0, 0};  // len 0: to the end of the file
  *result = CachestatResult{};
  int rc;
  do {
    rc = RawCachestat(fd, &range, result);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    *err = errno;
    return false;
  }
  return true;
}

Status ByMincore(int fd, const std::string& path, uint64_t size, uint64_t* kernel_pages) {
  const uint64_t page = PageSize();
  uint64_t resident = 0;
  std::vector<unsigned char> vec;
  for (uint64_t off = 0; off < size;) {
    size_t len = static_cast<size_t>(std::min<uint64_t>(kMincoreChunk, size - off));
    // MAP_SHARED: mincore then reports the page cache itself; mapping faults in nothing.
    void* addr = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(off));
    if (addr == MAP_FAILED) {
      return Status::FromErrno(fmt::format("{}: mmap for mincore at offset {}", path, off), errno);
    }
    Mapping mapping(addr, len);
    vec.assign((len + page - 1) / page, 0);
    if (::mincore(addr, len, vec.data()) != 0) {
      return Status::FromErrno(fmt::format("{}: mincore at offset {}", path, off), errno);
    }
    for (unsigned char v : vec) resident += v & 1U;
    off += len;  // kMincoreChunk is a multiple of any page size, so offsets stay aligned
  }
  *kernel_pages = resident;
  return Status::Ok();
}

// sync, then "3" into drop_caches. False where we may not (not root, read-only /proc/sys, a
// container): the caller falls back to fadvise.
bool TryDropCaches() {
  int fd;
  do {
    fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  UniqueFd owned(fd);
  ::sync();  // drop_caches frees only clean pages: write back dirty ones first
  return WriteExact(fd, "/proc/sys/vm/drop_caches", "3\n", 2).ok();
}

}  // namespace

namespace cache_internal {

bool CachestatAvailable() {
  // fd -1: a kernel with cachestat answers EBADF before reading either pointer; a kernel
  // without it (or a seccomp filter) answers ENOSYS or EPERM.
  static const bool available = [] {
    int rc = RawCachestat(-1, nullptr, nullptr);
    return !(rc != 0 && CachestatRefused(errno));
  }();
  return available;
}

Status MeasureResidencyWith(ResidencyImpl impl, const std::string& path, Residency* out) {
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  uint64_t size = 0;
  LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
  Residency r;
  r.total_pages = (size + kResidencyUnit - 1) / kResidencyUnit;
  if (size == 0) {
    *out = r;
    return Status::Ok();
  }

  bool use_cachestat =
      impl == ResidencyImpl::kCachestat || (impl == ResidencyImpl::kAuto && CachestatAvailable());
  if (impl == ResidencyImpl::kCachestat && !CachestatAvailable()) {
    return Status::Unsupported("cachestat(2) is not available on this kernel");
  }
  uint64_t kernel_pages = 0;
  if (use_cachestat) {
    CachestatResult cs{};
    int err = 0;
    if (CachestatWhole(fd.get(), &cs, &err)) {
      kernel_pages = cs.nr_cache;
    } else if (impl == ResidencyImpl::kAuto && (CachestatRefused(err) || err == EOPNOTSUPP)) {
      // EOPNOTSUPP: a file without a page cache of its own (hugetlbfs); mincore still answers.
      use_cachestat = false;
    } else {
      return Status::FromErrno(fmt::format("{}: cachestat", path), err);
    }
  }
  if (!use_cachestat) {
    // Since Linux 5.0, mincore on a file mapping reports every page resident unless we own the
    // file, may write it, or are privileged (a guard against cache side channels). Such an
    // answer would make every cold run look warm, so refuse to give one.
    struct stat st {};
    if (::geteuid() != 0 && ::fstat(fd.get(), &st) == 0 && st.st_uid != ::geteuid() &&
        ::access(path.c_str(), W_OK) != 0) {
      return Status::Unsupported(fmt::format(
          "{}: page-cache residency cannot be checked: not root, the file belongs to uid {} and "
          "is not writable by us, so cachestat is refused and mincore reports every page "
          "resident",
          path, st.st_uid));
    }
    LB_RETURN_IF_ERROR(ByMincore(fd.get(), path, size, &kernel_pages));
  }
  r.resident_pages = ToResidencyPages(kernel_pages, r.total_pages);
  *out = r;
  return Status::Ok();
}

Status DropFileCacheImpl(const std::string& path, bool try_drop_caches, DropMethod* used) {
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  DropMethod method = DropMethod::kFadvise;
  if (try_drop_caches && TryDropCaches()) method = DropMethod::kDropCaches;
  // Always, even after drop_caches: DONTNEED skips dirty pages, so write this file's back first
  // (a file just generated may still be dirty). fdatasync works on a read-only descriptor;
  // EINVAL or EROFS mean the file has nothing to write back.
  if (::fdatasync(fd.get()) != 0 && errno != EINVAL && errno != EROFS) {
    return Status::FromErrno(fmt::format("{}: fdatasync", path), errno);
  }
  int rc = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) return Status::FromErrno(fmt::format("{}: posix_fadvise(DONTNEED)", path), rc);
  if (used != nullptr) *used = method;
  return Status::Ok();
}

}  // namespace cache_internal

Status MeasureResidency(const std::string& path, Residency* out) {
  return cache_internal::MeasureResidencyWith(cache_internal::ResidencyImpl::kAuto, path, out);
}

std::string ResidencyMethod() {
  return cache_internal::CachestatAvailable() ? "cachestat" : "mincore";
}

const char* DropMethodName(DropMethod m) {
  switch (m) {
    case DropMethod::kDropCaches:
      return "drop_caches";
    case DropMethod::kFadvise:
      return "fadvise";
  }
  return "unknown";
}

bool DropsWholeCache() {
  const char* v = std::getenv("LOADBENCH_NO_DROP_CACHES");
  return ::geteuid() == 0 && (v == nullptr || *v == '\0' || std::string_view(v) == "0");
}

Status DropFileCache(const std::string& path, DropMethod* used) {
  return cache_internal::DropFileCacheImpl(path, DropsWholeCache(), used);
}

Status MeasureModelResidency(const TensorTable& model, ModelResidency* out) {
  ModelResidency m;
  bool first = true;
  for (size_t k = 0; k < model.shards.size(); ++k) {
    const std::string local = LocalFileOf(model.shards[k].path);
    if (local.empty()) {
      ++m.unseen_shards;
      continue;
    }
    Residency r;
    LB_RETURN_IF_ERROR(MeasureResidency(local, &r));
    m.total.resident_pages += r.resident_pages;
    m.total.total_pages += r.total_pages;
    m.shard_min = first ? r.fraction() : std::min(m.shard_min, r.fraction());
    m.shard_max = first ? r.fraction() : std::max(m.shard_max, r.fraction());
    first = false;
  }
  *out = m;
  return Status::Ok();
}

Status DropModelCache(const TensorTable& model, DropMethod* used) {
  bool first = true;
  for (size_t k = 0; k < model.shards.size(); ++k) {
    const std::string local = LocalFileOf(model.shards[k].path);
    if (local.empty()) continue;  // a server elsewhere: its cache is its own
    DropMethod m = DropMethod::kFadvise;
    // drop_caches empties the whole cache: once, for the first shard; fadvise for the others.
    LB_RETURN_IF_ERROR(cache_internal::DropFileCacheImpl(local, first && DropsWholeCache(), &m));
    if (first && used != nullptr) *used = m;
    first = false;
  }
  return Status::Ok();
}

namespace {

// A remote object read whole through the server, as a remote strategy reads it, into a buffer
// that is reused: the server's cache (here or elsewhere) then holds it.
Status WarmRemote(const std::string& name) {
  std::unique_ptr<ByteSource> src;
  LB_RETURN_IF_ERROR(OpenSource(name, &src));
  std::unique_ptr<char[]> buf(new char[kWarmBuffer]);
  for (uint64_t at = 0; at < src->size(); at += kWarmBuffer) {
    LB_RETURN_IF_ERROR(
        src->ReadAt(buf.get(), std::min<uint64_t>(kWarmBuffer, src->size() - at), at));
  }
  return Status::Ok();
}

}  // namespace

Status WarmModel(const TensorTable& model) {
  for (const ShardInfo& s : model.shards) {
    LB_RETURN_IF_ERROR(IsRemote(s.path) ? WarmRemote(s.path) : WarmFile(s.path));
  }
  return Status::Ok();
}

Status WarmFile(const std::string& path) {
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  // Advice only: a filesystem that ignores it still gets read in full below.
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<char[]> buf(new char[kWarmBuffer]);
  uint64_t done = 0;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.get(), kWarmBuffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(fmt::format("{}: read at offset {}", path, done), errno);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

uint64_t ReadBackOwnCode() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> files;
  for (std::string line; std::getline(maps, line);) {
    // address perms offset dev inode path: file-backed, executable mappings
    std::istringstream f(line);
    std::string range, perms, offset, dev, inode, path;
    f >> range >> perms >> offset >> dev >> inode >> path;
    if (perms.size() >= 3 && perms[2] == 'x' && path.starts_with("/")) files.insert(path);
  }
  uint64_t bytes = 0;
  std::vector<char> buf(1 << 20);
  for (const std::string& path : files) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    for (ssize_t n; fd.valid() && (n = ::read(fd.get(), buf.data(), buf.size())) > 0;) {
      bytes += static_cast<uint64_t>(n);
    }
  }
  return bytes;
}

std::string WarmReadProblem(uint64_t read_bytes, uint64_t file_bytes) {
  const double frac = file_bytes > 0 ? static_cast<double>(read_bytes) / file_bytes : 0;
  if (frac <= kWarmMaxStorageRead) return "";
  return fmt::format("warm run read {} ({:.1f}% of the file) from storage (limit {:.0f}%): the "
                     "page cache lost the file during the run",
                     FormatBytes(read_bytes), frac * 100, kWarmMaxStorageRead * 100);
}

std::string ColdReadProblem(uint64_t read_bytes, uint64_t file_bytes) {
  const double frac = file_bytes > 0 ? static_cast<double>(read_bytes) / file_bytes : 1;
  if (frac >= kColdMinStorageRead) return "";
  return fmt::format("read {} of {} from storage ({:.1f}%) on a cold run: it cannot have loaded "
                     "the model (need {:.0f}%, by the I/O counters of the command and the "
                     "processes it waited for)",
                     FormatBytes(read_bytes), FormatBytes(file_bytes), frac * 100,
                     kColdMinStorageRead * 100);
}

std::string StartStateProblem(const std::string& cache, double resident_fraction) {
  if (cache == "cold" && resident_fraction > kColdMaxResident) {
    return fmt::format("cold run started {:.1f}% resident (limit {:.0f}%)", resident_fraction * 100,
                       kColdMaxResident * 100);
  }
  if (cache == "warm" && resident_fraction < kWarmMinResident) {
    return fmt::format("warm run started only {:.1f}% resident (need {:.0f}%)",
                       resident_fraction * 100, kWarmMinResident * 100);
  }
  return "";
}

}  // namespace loadbench
