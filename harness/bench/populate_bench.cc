// What it costs to map a cached file's pages up front: madvise(MADV_POPULATE_READ) over a
// mapping, and mmap with MAP_POPULATE, the two calls the eager mmap strategies make. Only the
// populating call is timed (manual time); the munmap after it is not.
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "harness/bench/bench_util.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 uapi; older libc headers lack the name
#endif

namespace loadbench::bench {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_PopulateRead(benchmark::State& state) {
  const CachedFile* file = WarmScratchFile(state);
  if (file == nullptr) return;
  FaultTally tally;
  for (auto _ : state) {
    void* p = ::mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE, file->fd, 0);
    if (p == MAP_FAILED) {
      state.SkipWithError(fmt::format("{}: mmap: {}", file->path, std::strerror(errno)).c_str());
      break;
    }
    Mapping m(p, file->size);
    const FaultCount before = ThreadFaults();
    const auto start = std::chrono::steady_clock::now();
    const int rc = ::madvise(p, file->size, MADV_POPULATE_READ);
    const double s = SecondsSince(start);
    const int err = errno;
    const FaultCount after = ThreadFaults();
    if (rc != 0) {
      state.SkipWithError(
          err == EINVAL
              ? "madvise(MADV_POPULATE_READ) returned EINVAL: this kernel lacks it (Linux 5.14+)"
              : fmt::format("{}: madvise(MADV_POPULATE_READ): {}", file->path, std::strerror(err))
                    .c_str());
      break;
    }
    state.SetIterationTime(s);
    tally.Add(s, before, after, file->size);
  }
  tally.Report(state);
}
BENCHMARK(BM_PopulateRead)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_MapPopulate(benchmark::State& state) {
  const CachedFile* file = WarmScratchFile(state);
  if (file == nullptr) return;
  FaultTally tally;
  for (auto _ : state) {
    const FaultCount before = ThreadFaults();
    const auto start = std::chrono::steady_clock::now();
    void* p = ::mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, file->fd, 0);
    const double s = SecondsSince(start);
    const int err = errno;
    const FaultCount after = ThreadFaults();
    if (p == MAP_FAILED) {
      state.SkipWithError(
          fmt::format("{}: mmap(MAP_POPULATE): {}", file->path, std::strerror(err)).c_str());
      break;
    }
    Mapping m(p, file->size);
    state.SetIterationTime(s);
    tally.Add(s, before, after, file->size);
  }
  tally.Report(state);
}
BENCHMARK(BM_MapPopulate)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loadbench::bench
