#include "harness/bench/bench_util.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "loaders/base/units.h"

namespace loadbench::bench {
namespace {

constexpr size_t kWriteChunk = 8 * kMiB;

Status WriteCachedFile(int fd, const std::string& path, uint64_t size) {
  const std::vector<std::byte> chunk(kWriteChunk, std::byte{0x5a});
  for (uint64_t off = 0; off < size; off += chunk.size()) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - off));
    LB_RETURN_IF_ERROR(PwriteExact(fd, path, chunk.data(), len, off));
  }
  // POSIX_FADV_DONTNEED below evicts clean pages only.
  if (::fdatasync(fd) != 0) return Status::FromErrno(fmt::format("{}: fdatasync", path), errno);
  return Status::Ok();
}

Status MakeCachedFile(UniqueFd* fd, std::string* path) {
  const std::string dir = BenchDir();
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return Status::FromErrno(dir, errno);
  const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t need = kCachedFileBytes + kCachedFileBytes / 4;  // leave the disk some room
  if (avail < need) {
    return Status::BadInput(
        fmt::format("{}: not enough free space for the {} scratch file: need {}, have {}", dir,
                    FormatBytes(kCachedFileBytes), FormatBytes(need), FormatBytes(avail)));
  }
  LB_RETURN_IF_ERROR(OpenScratchFile(fd, path));
  LB_RETURN_IF_ERROR(WriteCachedFile(fd->get(), *path, kCachedFileBytes));
  // Cached the way the harness's warm runs find a file: evicted, then read back (EnsureCached
  // does that), not left over from writing it. The page cache's folio sizes, and so the fault
  // counts, differ between the two (kernel 6.18, ext4: 128 read faults over 256 MiB left from
  // writing, 812 after WarmFile read it back).
  const int rc = ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) return Status::FromErrno(fmt::format("{}: posix_fadvise(DONTNEED)", *path), rc);
  return Status::Ok();
}

// Every page resident, re-reading the file once when something (a test dropping caches beside
// us) evicted part of it.
Status EnsureCached(const std::string& path) {
  Residency r;
  LB_RETURN_IF_ERROR(MeasureResidency(path, &r));
  if (r.resident_pages == r.total_pages) return Status::Ok();
  LB_RETURN_IF_ERROR(WarmFile(path));
  LB_RETURN_IF_ERROR(MeasureResidency(path, &r));
  if (r.resident_pages == r.total_pages) return Status::Ok();
  return Status::Failed(fmt::format("{}: only {} of {} pages stay in the page cache", path,
                                    r.resident_pages, r.total_pages));
}

}  // namespace

std::string BenchDir() {
  const char* dir = std::getenv("LOADBENCH_BENCH_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

Status OpenScratchFile(UniqueFd* fd, std::string* path) {
  return OpenUnnamedFile(BenchDir(), fd, path);
}

const CachedFile* WarmScratchFile(benchmark::State& state) {
  // Made once, kept open (so cached) until exit, when closing the fd frees it.
  static UniqueFd fd;
  static CachedFile file{-1, "", kCachedFileBytes};
  static const Status made = [] {
    const Status s = MakeCachedFile(&fd, &file.path);
    file.fd = fd.get();
    return s;
  }();
  Status s = made.ok() ? EnsureCached(file.path) : made;
  if (!s.ok()) {
    state.SkipWithError(s.message().c_str());
    return nullptr;
  }
  return &file;
}

FaultCount ThreadFaults() {
  struct rusage ru {};
  ::getrusage(RUSAGE_THREAD, &ru);
  return {ru.ru_minflt, ru.ru_majflt};
}

double TouchPages(std::byte* p, size_t len, bool write) {
  const size_t page = PageSize();
  const auto start = std::chrono::steady_clock::now();
  if (write) {
    for (size_t off = 0; off < len; off += page) {
      *static_cast<volatile std::byte*>(p + off) = std::byte{1};
    }
  } else {
    for (size_t off = 0; off < len; off += page) {
      std::byte b = *static_cast<volatile std::byte*>(p + off);
      benchmark::DoNotOptimize(b);
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void FaultTally::Add(double seconds, const FaultCount& before, const FaultCount& after,
                     uint64_t bytes) {
  seconds_ += seconds;
  minor_ += after.minor - before.minor;
  major_ += after.major - before.major;
  bytes_ += bytes;
}

void FaultTally::Report(benchmark::State& state) const {
  using benchmark::Counter;
  state.SetBytesProcessed(static_cast<int64_t>(bytes_));
  state.counters["faults"] = Counter(static_cast<double>(minor_), Counter::kAvgIterations);
  state.counters["major_faults"] = Counter(static_cast<double>(major_), Counter::kAvgIterations);
  if (bytes_ == 0) return;
  state.counters["pages"] =
      Counter(static_cast<double>(bytes_ / PageSize()), Counter::kAvgIterations);
  if (minor_ > 0) state.counters["us_per_fault"] = seconds_ * 1e6 / static_cast<double>(minor_);
  state.counters["ns_per_page"] = seconds_ * 1e9 * static_cast<double>(PageSize()) / bytes_;
  state.counters["s_per_GiB"] = seconds_ * static_cast<double>(kGiB) / bytes_;
}

}  // namespace loadbench::bench
