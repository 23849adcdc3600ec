// What one page fault costs: first touch of anonymous memory in 4 KiB pages and in 2 MiB
// transparent huge pages (what a load into a malloc or thp buffer pays per page), and a minor
// fault on a cached file mapping (what an mmap load pays on a warm cache), with the touch loop's
// own cost beside it. Each iteration maps a fresh region outside the timed part; only the touch
// loop is timed (manual time).
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "harness/bench/bench_util.h"

namespace loadbench::bench {
namespace {

constexpr size_t kAnonBytes = 32 * kMiB;
constexpr size_t kHugePage = 2 * kMiB;
constexpr const char* kThpDir = "/sys/kernel/mm/transparent_hugepage/";

// Anonymous read-write memory of `len` bytes, or an empty Mapping after SkipWithError.
Mapping MapAnon(benchmark::State& state, size_t len) {
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    state.SkipWithError(
        fmt::format("mmap of {} anonymous bytes: {}", len, std::strerror(errno)).c_str());
    return Mapping();
  }
  return Mapping(p, len);
}

bool Advise(benchmark::State& state, void* p, size_t len, int advice, const char* name) {
  if (::madvise(p, len, advice) == 0) return true;
  state.SkipWithError(fmt::format("madvise({}): {}", name, std::strerror(errno)).c_str());
  return false;
}

// The "AnonHugePages" line of /proc/self/smaps_rollup, in bytes: huge pages mapped by a PMD.
uint64_t AnonHugeBytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  uint64_t kib = 0;
  while (in >> key) {
    if (key == "AnonHugePages:" && in >> kib) return kib * 1024;
  }
  return 0;
}

// The selected word of a THP sysfs setting ("always [madvise] never" -> "madvise").
std::string ThpSetting(const char* name) {
  std::ifstream in(std::string(kThpDir) + name);
  std::string word;
  while (in >> word) {
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') {
      return word.substr(1, word.size() - 2);
    }
  }
  return "unknown";
}

void BM_FaultAnon4K(benchmark::State& state) {
  FaultTally tally;
  for (auto _ : state) {
    Mapping m = MapAnon(state, kAnonBytes);
    if (m.size() == 0) break;
    // No THP of any size: every page is its own fault.
    if (!Advise(state, m.mutable_data(), m.size(), MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE")) break;
    const FaultCount before = ThreadFaults();
    const double s = TouchPages(m.mutable_data(), m.size(), /*write=*/true);
    const FaultCount after = ThreadFaults();
    state.SetIterationTime(s);
    tally.Add(s, before, after, m.size());
  }  // munmap here, after the iteration's time is set
  tally.Report(state);
}
BENCHMARK(BM_FaultAnon4K)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_FaultAnonThp(benchmark::State& state) {
  const std::string enabled = ThpSetting("enabled");
  if (enabled == "never") {
    state.SkipWithError(fmt::format("THP not granted: {}enabled is [never]", kThpDir).c_str());
    return;
  }
  FaultTally tally;
  uint64_t huge_bytes = 0;
  for (auto _ : state) {
    // One huge page more than needed, so that a 2 MiB-aligned region fits inside.
    Mapping m = MapAnon(state, kAnonBytes + kHugePage);
    if (m.size() == 0) break;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(m.mutable_data());
    std::byte* p = m.mutable_data() + ((kHugePage - addr % kHugePage) % kHugePage);
    if (!Advise(state, p, kAnonBytes, MADV_HUGEPAGE, "MADV_HUGEPAGE")) break;
    const uint64_t huge_before = AnonHugeBytes();
    const FaultCount before = ThreadFaults();
    const double s = TouchPages(p, kAnonBytes, /*write=*/true);
    const FaultCount after = ThreadFaults();
    const uint64_t huge_after = AnonHugeBytes();
    huge_bytes += huge_after > huge_before ? huge_after - huge_before : 0;
    state.SetIterationTime(s);
    tally.Add(s, before, after, kAnonBytes);
  }
  if (huge_bytes == 0) {
    state.SkipWithError(fmt::format("THP not granted: AnonHugePages did not grow (enabled [{}], "
                                    "defrag [{}])",
                                    enabled, ThpSetting("defrag"))
                            .c_str());
    return;
  }
  tally.Report(state);
  // Below 1: the kernel fell back to 4 KiB pages for part of the region (no free huge page).
  state.counters["thp_fraction"] =
      static_cast<double>(huge_bytes) / (static_cast<double>(kAnonBytes) * state.iterations());
}
BENCHMARK(BM_FaultAnonThp)->UseManualTime()->Unit(benchmark::kMillisecond);

// All of the cached file, read-only and MAP_PRIVATE as the mmap strategies map it, plus
// `extra_flags`; an empty Mapping after SkipWithError.
Mapping MapCachedFile(benchmark::State& state, const CachedFile& file, int extra_flags) {
  void* p = ::mmap(nullptr, file.size, PROT_READ, MAP_PRIVATE | extra_flags, file.fd, 0);
  if (p == MAP_FAILED) {
    state.SkipWithError(fmt::format("{}: mmap: {}", file.path, std::strerror(errno)).c_str());
    return Mapping();
  }
  return Mapping(p, file.size);
}

// Each iteration maps the cached file (MapCachedFile with `extra_flags`) and reads one byte of
// every page; only that touch loop is timed, and its faults are tallied.
void TouchCachedFile(benchmark::State& state, int extra_flags) {
  const CachedFile* file = WarmScratchFile(state);
  if (file == nullptr) return;
  FaultTally tally;
  for (auto _ : state) {
    Mapping m = MapCachedFile(state, *file, extra_flags);
    if (m.size() == 0) break;
    const FaultCount before = ThreadFaults();
    const double s = TouchPages(m.mutable_data(), m.size(), /*write=*/false);
    const FaultCount after = ThreadFaults();
    state.SetIterationTime(s);
    tally.Add(s, before, after, m.size());
  }
  tally.Report(state);
}

// Read faults on the cached file. Fault-around and large folios map many pages per fault, so
// faults is far below pages.
void BM_FaultFileMinor(benchmark::State& state) { TouchCachedFile(state, 0); }
BENCHMARK(BM_FaultFileMinor)->UseManualTime()->Unit(benchmark::kMillisecond);

// The same touch loop over a mapping populated beforehand (untimed): no fault, only the loop's
// own TLB and cache misses, to subtract from BM_FaultFileMinor's time.
void BM_TouchMappedFile(benchmark::State& state) { TouchCachedFile(state, MAP_POPULATE); }
BENCHMARK(BM_TouchMappedFile)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loadbench::bench
