// Shared by the microbenchmarks: scratch files that leave nothing behind, the thread's fault
// counters, and the counters every fault benchmark reports.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench::bench {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// Where scratch files go: $LOADBENCH_BENCH_DIR, else /tmp. Its filesystem decides what the
// file-backed benchmarks measure (on tmpfs they measure shmem, not a disk filesystem's cache).
std::string BenchDir();

// The base page size (sysconf), the stride of every touch loop.
size_t PageSize();

// A scratch file in BenchDir() that has no name (O_TMPFILE; where the filesystem lacks it, a
// file unlinked the moment it is created): nothing is left on disk however the process ends,
// SIGINT and SIGKILL included, and its space is freed when `fd` is closed. `*path` is
// /proc/self/fd/N, which reopens the file and names it in messages.
Status OpenScratchFile(UniqueFd* fd, std::string* path);

// The page cache file shared by the file-backed benchmarks: kCachedFileBytes of non-zero
// bytes, written, synced and evicted on first use, then read back into the page cache; at
// every call checked resident and read again where something evicted part of it. Returns
// null after state.SkipWithError with the reason when it cannot be made: not enough free
// space (checked with statvfs before writing), a write error, or pages that do not stay cached.
inline constexpr uint64_t kCachedFileBytes = 256 * kMiB;
struct CachedFile {
  int fd;
  std::string path;
  uint64_t size;
};
const CachedFile* WarmScratchFile(benchmark::State& state);

// Faults this thread has taken so far (getrusage RUSAGE_THREAD), counted by the kernel.
struct FaultCount {
  int64_t minor = 0;
  int64_t major = 0;
};
FaultCount ThreadFaults();

// Touches one byte of every page of [p, p + len), a write when `write` and a read otherwise,
// and returns the wall seconds it took (steady_clock).
double TouchPages(std::byte* p, size_t len, bool write);

// Totals of a fault or populate benchmark over all its iterations, reported as counters:
//   faults         minor faults per iteration (counted, not assumed)
//   major_faults   major faults per iteration: non-zero means the file was not all cached
//   pages          base pages covered per iteration (far above faults where one fault maps
//                  a huge page, a large folio or a fault-around window)
//   us_per_fault   timed seconds / minor faults (absent when no fault was counted)
//   ns_per_page    timed seconds / base pages covered
//   s_per_GiB      timed seconds / GiB covered
//   bytes_per_second (SetBytesProcessed) over the timed seconds
// Call Report only after the loop; the timed seconds are those given to SetIterationTime.
class FaultTally final {
 public:
  void Add(double seconds, const FaultCount& before, const FaultCount& after, uint64_t bytes);
  void Report(benchmark::State& state) const;

 private:
  double seconds_ = 0;
  int64_t minor_ = 0;
  int64_t major_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace loadbench::bench
