// The probe's measurements: each times one thing with steady_clock, on a page-cache state that
// was checked, with faults counted by the kernel (getrusage), never inferred from sizes.
#include "harness/probe/probe_measure.h"

#include <fcntl.h>
#include <linux/virtio_balloon.h>
#include <linux/virtio_ids.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "harness/process/interrupt.h"
#include "harness/stats/paired_stats.h"
#include "loaders/cuda/gpu.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* kThpDir = "/sys/kernel/mm/transparent_hugepage/";
constexpr const char* kInterrupted = "interrupted";

// Keeps the compiler from dropping a read loop or a copy whose result nothing else reads.
volatile unsigned g_sink = 0;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

size_t PageBytes() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

struct Faults {
  long minor = 0;
  long major = 0;
};
Faults ThreadFaults() {
  struct rusage ru {};
  ::getrusage(RUSAGE_THREAD, &ru);
  return {ru.ru_minflt, ru.ru_majflt};
}

// Touches one byte per `stride` bytes of [p, p + len): a write, or a read. Returns seconds.
double Touch(std::byte* p, size_t len, size_t stride, bool write) {
  const auto t0 = Clock::now();
  unsigned sum = 0;
  for (size_t off = 0; off < len; off += stride) {
    if (write) {
      *static_cast<volatile std::byte*>(p + off) = std::byte{1};
    } else {
      sum += static_cast<unsigned>(*static_cast<volatile const std::byte*>(p + off));
    }
  }
  const double s = Since(t0);
  g_sink = sum;
  return s;
}

Status MapAnon(size_t len, Mapping* out) {
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Status::FromErrno(fmt::format("mmap of {} anonymous bytes", len), errno);
  }
  *out = Mapping(p, len);
  return Status::Ok();
}

// Empty when `path` is >= 99% resident after reading it through the cache, else why not.
std::string WarmAndCheck(const std::string& path, Json* j) {
  Residency r;
  Status s = WarmFile(path);
  if (s.ok()) s = MeasureResidency(path, &r);
  if (!s.ok()) return s.message();
  (*j)["resident"] = r.fraction();
  if (r.fraction() >= kWarmMinResident) return "";
  return fmt::format("not warm: only {:.1f}% resident after reading it (needs >= {:.0f}%)",
                     r.fraction() * 100, kWarmMinResident * 100);
}

// read() of kBlockBytes at a time until EOF; the bytes must come to `bytes`.
Status ReadToEnd(int fd, const std::string& path, std::byte* buf, uint64_t bytes, double* seconds) {
  uint64_t total = 0;
  const auto t0 = Clock::now();
  while (!Interrupted()) {
    const ssize_t got = ::read(fd, buf, kBlockBytes);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::FromErrno(fmt::format("{}: read at offset {}", path, total), errno);
    if (got == 0) break;
    total += static_cast<uint64_t>(got);
  }
  *seconds = Since(t0);
  if (Interrupted()) return Status::Failed(kInterrupted);
  if (total != bytes) {
    return Status::IOError(fmt::format("{}: read {} bytes, expected {}", path, total, bytes));
  }
  return Status::Ok();
}

std::string FirstWord(const std::string& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

// One timed touch of a region, with the faults the kernel counted for it.
FaultRep TouchCounted(std::byte* p, size_t len, bool write) {
  const Faults before = ThreadFaults();
  FaultRep t;
  t.seconds = Touch(p, len, PageBytes(), write);
  const Faults after = ThreadFaults();
  t.minor = after.minor - before.minor;
  t.major = after.major - before.major;
  return t;
}

// A repetition's microseconds per fault; null where it counted none.
Json UsPerFault(const FaultRep& t) {
  return t.minor > 0 ? Json(t.seconds / static_cast<double>(t.minor) * 1e6) : Json();
}

// On a VM that hands freed memory back to the host, why the repetitions differ.
void NoteFreePageReporting(Json* j) {
  if (FreePageReporting() != true) return;
  (*j)["vm_note"] =
      "this VM reports free guest memory to the host (virtio-balloon free page reporting), "
      "which takes it back: a first touch of memory the guest freed seconds earlier also "
      "pays a host fault, so repetitions differ; best_us_per_fault is nearest the guest "
      "kernel's own cost";
}

Json FaultRecord(uint64_t bytes, int reps, const std::string& method) {
  return {{"us_per_fault", nullptr},
          {"median_us", nullptr},
          {"spread_us", nullptr},
          {"faults", nullptr},
          {"bytes", bytes},
          {"page_bytes", PageBytes()},
          {"reps", reps},
          {"best_us_per_fault", nullptr},
          {"reps_us_per_fault", nullptr},
          {"chosen", fmt::format("the repetition of median time, of {}", reps)},
          {"method", method + "; us_per_fault and median_us: the microseconds per fault of the "
                              "repetition of median time; spread_us: [min, max] over the "
                              "repetitions"}};
}

// The THP measurement's figures from its repetitions over `bytes`: those that got no huge page
// are left out of the median, and said; none left is no figure.
Json ThpFigures(Json j, const std::vector<FaultRep>& done, uint64_t bytes) {
  NoteFreePageReporting(&j);
  const std::optional<FaultRep> t = RecordFaultReps(done, &j);
  if (!t) {
    return Unmeasured(j, fmt::format("no huge page was granted in any of {} repetitions: "
                                     "AnonHugePages did not grow (enabled [{}], defrag [{}])",
                                     done.size(), j["thp_enabled"].get<std::string>(),
                                     j["thp_defrag"].get<std::string>()));
  }
  if (t->minor <= 0) return Unmeasured(j, "the kernel counted no fault");
  const size_t left_out = j["reps_left_out"].get<size_t>();
  if (left_out > 0) {
    j["left_out_note"] = fmt::format(
        "{} of {} repetitions got no huge page (AnonHugePages did not grow): they are no 2 MiB "
        "first touch and are left out of median_us and spread_us",
        left_out, done.size());
  }
  j["chosen"] = fmt::format("the repetition of median time, of the {} of {} that got huge pages",
                            done.size() - left_out, done.size());
  j["gb_per_s"] = static_cast<double>(bytes) / t->seconds / 1e9;
  j["anon_huge_bytes"] = *t->huge_bytes;
  // Below 1: the kernel fell back to base pages for part of the region.
  j["granted_fraction"] = static_cast<double>(*t->huge_bytes) / static_cast<double>(bytes);
  return j;
}

// The "AnonHugePages" of /proc/self/smaps_rollup in bytes: anonymous memory mapped by PMDs.
std::optional<uint64_t> AnonHugeBytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  uint64_t kib = 0;
  while (in >> key) {
    if (key == "AnonHugePages:" && in >> kib) return kib * 1024;
  }
  return std::nullopt;
}

// The selected word of a THP setting ("always [madvise] never" -> "madvise"), or "".
std::string ThpSetting(const std::string& name) {
  std::ifstream in(kThpDir + name);
  std::string word;
  while (in >> word) {
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') {
      return word.substr(1, word.size() - 2);
    }
  }
  return "";
}

}  // namespace

Json Unmeasured(Json j, const std::string& why) {
  j["reason"] = Interrupted() ? std::string(kInterrupted) : why;
  return j;
}

std::optional<FaultRep> RecordFaultReps(const std::vector<FaultRep>& reps, Json* j) {
  Json all = Json::array(), huge = Json::array();
  std::vector<FaultRep> kept;
  bool thp = false;
  for (const FaultRep& t : reps) {
    all.push_back(UsPerFault(t));
    thp = thp || t.huge_bytes.has_value();
    huge.push_back(t.huge_bytes.value_or(0) > 0);
    if (!t.huge_bytes || *t.huge_bytes > 0) kept.push_back(t);
  }
  (*j)["reps_us_per_fault"] = std::move(all);
  if (thp) {
    (*j)["reps_huge_page"] = std::move(huge);
    (*j)["reps_in_median"] = kept.size();
    (*j)["reps_left_out"] = reps.size() - kept.size();
  }
  if (kept.empty()) return std::nullopt;
  // A cost is typical, not best: the repetition of median time.
  std::sort(kept.begin(), kept.end(),
            [](const FaultRep& a, const FaultRep& b) { return a.seconds < b.seconds; });
  const FaultRep median = kept[kept.size() / 2];
  std::vector<double> us;
  for (const FaultRep& t : kept) {
    if (t.minor > 0) us.push_back(UsPerFault(t).get<double>());
  }
  if (median.minor > 0) {
    const auto [least, most] = std::minmax_element(us.begin(), us.end());
    (*j)["us_per_fault"] = UsPerFault(median);
    (*j)["median_us"] = UsPerFault(median);
    (*j)["spread_us"] = {*least, *most};
    (*j)["best_us_per_fault"] = *least;
    (*j)["faults"] = median.minor;
  }
  return median;
}

std::string DropAndCheck(const std::string& path, Json* checks) {
  DropMethod used = DropMethod::kDropCaches;
  Residency r;
  Status s = DropFileCache(path, &used);
  if (s.ok()) s = MeasureResidency(path, &r);
  if (!s.ok()) return s.message();
  checks->push_back({{"drop_method", DropMethodName(used)}, {"resident", r.fraction()}});
  if (r.fraction() <= kColdMaxResident) return "";
  return fmt::format("not cold: still {:.1f}% resident after {} (a cold read needs <= {:.0f}%)",
                     r.fraction() * 100, DropMethodName(used), kColdMaxResident * 100);
}

Json Bandwidth(Json j, uint64_t bytes, int reps, const std::function<std::string()>& prepare,
               const std::function<Status(double*)>& timed) {
  std::vector<double> rates;
  for (int i = 0; i < reps; ++i) {
    if (Interrupted()) return Unmeasured(j, kInterrupted);
    if (const std::string why = prepare(); !why.empty()) return Unmeasured(j, why);
    double seconds = 0;
    if (Status s = timed(&seconds); !s.ok()) return Unmeasured(j, s.message());
    rates.push_back(static_cast<double>(bytes) / seconds / 1e9);
  }
  j["gb_per_s"] = *std::max_element(rates.begin(), rates.end());
  j["median_gb_per_s"] = paired::Median(rates);
  j["reps_gb_per_s"] = rates;
  return j;
}

Json BandwidthRecord(uint64_t bytes, int reps, const std::string& method) {
  return {{"gb_per_s", nullptr},
          {"median_gb_per_s", nullptr},
          {"reps_gb_per_s", nullptr},
          {"bytes", bytes},
          {"reps", reps},
          {"chosen", fmt::format("best of {}", reps)},
          {"method", method}};
}

std::optional<bool> FreePageReporting() {
  std::error_code ec;
  fs::directory_iterator it("/sys/bus/virtio/devices", ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return false;  // no virtio devices at all
    return std::nullopt;
  }
  for (const fs::directory_entry& dev : it) {
    const std::string dir = dev.path().string();
    if (std::strtoul(FirstWord(dir + "/device").c_str(), nullptr, 16) != VIRTIO_ID_BALLOON) {
      continue;
    }
    // One character per feature bit, bit 0 first: those the driver and device agreed on.
    const std::string features = FirstWord(dir + "/features");
    if (features.size() > VIRTIO_BALLOON_F_REPORTING &&
        features[VIRTIO_BALLOON_F_REPORTING] == '1') {
      return true;
    }
  }
  return false;
}

Json SequentialWrite(int fd, const std::string& path, uint64_t bytes) {
  Json j{{"gb_per_s", nullptr},
         {"seconds", nullptr},
         {"bytes", bytes},
         {"block_bytes", kBlockBytes},
         {"reps", 1},
         {"chosen", "one pass"},
         {"method", "pwrite of 1 MiB blocks of pseudo-random bytes, then fsync; both timed"}};
  // Eight different blocks, each stamped with its offset: no two blocks of the file are alike,
  // so a device or host that compresses or deduplicates gets no easy ride.
  constexpr uint64_t kPoolBlocks = 8;
  std::vector<uint64_t> pool(kPoolBlocks * kBlockBytes / sizeof(uint64_t));
  std::mt19937_64 gen(0x6c6f616462656e63);
  for (uint64_t& w : pool) w = gen();
  auto* base = reinterpret_cast<std::byte*>(pool.data());
  const auto t0 = Clock::now();
  for (uint64_t off = 0; off < bytes; off += kBlockBytes) {
    if (Interrupted()) return Unmeasured(j, kInterrupted);
    std::byte* block = base + (off / kBlockBytes % kPoolBlocks) * kBlockBytes;
    std::memcpy(block, &off, sizeof off);
    if (Status s = PwriteExact(fd, path, block, kBlockBytes, off); !s.ok()) {
      return Unmeasured(j, s.message());
    }
  }
  if (::fsync(fd) != 0) return Unmeasured(j, Status::FromErrno(path + ": fsync", errno).message());
  const double seconds = Since(t0);
  j["gb_per_s"] = static_cast<double>(bytes) / seconds / 1e9;
  j["seconds"] = seconds;
  return j;
}

Json ColdBufferedRead(const std::string& path, uint64_t bytes, int reps) {
  Json j = BandwidthRecord(bytes, reps,
                           "read() of 1 MiB at a time through the page cache, default "
                           "read-ahead; the file's cache dropped and checked <= 1% resident "
                           "before each");
  j["block_bytes"] = kBlockBytes;
  j["cold_checks"] = nullptr;
  Mapping buf;
  if (Status s = MapAnon(kBlockBytes, &buf); !s.ok()) return Unmeasured(j, s.message());
  std::memset(buf.mutable_data(), 0, buf.size());
  Json checks = Json::array();
  j = Bandwidth(
      std::move(j), bytes, reps, [&] { return DropAndCheck(path, &checks); },
      [&](double* seconds) {
        UniqueFd fd;  // a fresh open file: read-ahead starts from scratch
        LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
        return ReadToEnd(fd.get(), path, buf.mutable_data(), bytes, seconds);
      });
  j["cold_checks"] = checks;
  return j;
}

Json WarmRead(const std::string& path, uint64_t bytes, int reps) {
  Json j = BandwidthRecord(bytes, reps,
                           "read() of 1 MiB at a time from the page cache; the file read "
                           "through the cache first and checked >= 99% resident");
  j["block_bytes"] = kBlockBytes;
  j["resident"] = nullptr;
  Mapping buf;
  if (Status s = MapAnon(kBlockBytes, &buf); !s.ok()) return Unmeasured(j, s.message());
  std::memset(buf.mutable_data(), 0, buf.size());
  if (const std::string why = WarmAndCheck(path, &j); !why.empty()) return Unmeasured(j, why);
  return Bandwidth(
      std::move(j), bytes, reps, [] { return std::string(); },
      [&](double* seconds) {
        UniqueFd fd;
        LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
        return ReadToEnd(fd.get(), path, buf.mutable_data(), bytes, seconds);
      });
}

Json MemcpyBandwidth(uint64_t bytes, int reps) {
  Json j = BandwidthRecord(bytes, reps,
                           "memcpy between two anonymous buffers faulted in beforehand; GB/s is "
                           "bytes copied per second");
  Mapping src, dst;
  Status s = MapAnon(bytes, &src);
  if (s.ok()) s = MapAnon(bytes, &dst);
  if (!s.ok()) return Unmeasured(j, s.message());
  std::memset(src.mutable_data(), 0x5a, bytes);
  std::memset(dst.mutable_data(), 0xa5, bytes);
  return Bandwidth(
      std::move(j), bytes, reps, [] { return std::string(); },
      [&](double* seconds) {
        const auto t0 = Clock::now();
        std::memcpy(dst.mutable_data(), src.data(), bytes);
        *seconds = Since(t0);
        g_sink = static_cast<unsigned>(dst.data()[bytes - 1]);
        return Status::Ok();
      });
}

Json MemoryFill(uint64_t bytes, int reps) {
  Json j = BandwidthRecord(bytes, reps,
                           "memset of an anonymous buffer faulted in beforehand (one memset, "
                           "untimed), so that it times filling, not faulting; GB/s is bytes "
                           "written per second; spread_gb_per_s is [min, max] of the "
                           "repetitions");
  j["chosen"] = fmt::format("median of {}", reps);
  j["best_gb_per_s"] = nullptr;
  j["spread_gb_per_s"] = nullptr;
  Mapping buf;
  if (Status s = MapAnon(bytes, &buf); !s.ok()) return Unmeasured(j, s.message());
  std::memset(buf.mutable_data(), 0xa5, bytes);
  int value = 0;
  j = Bandwidth(
      std::move(j), bytes, reps, [] { return std::string(); },
      [&](double* seconds) {
        const auto t0 = Clock::now();
        std::memset(buf.mutable_data(), ++value & 0xff, bytes);
        *seconds = Since(t0);
        g_sink = static_cast<unsigned>(buf.data()[bytes / 2]);
        return Status::Ok();
      });
  if (!j["gb_per_s"].is_number()) return j;
  // A fill rate is a cost, as the faults are: typical (the median), not best.
  const std::vector<double> rates = j["reps_gb_per_s"];
  const auto [least, most] = std::minmax_element(rates.begin(), rates.end());
  j["best_gb_per_s"] = *most;
  j["spread_gb_per_s"] = {*least, *most};
  j["gb_per_s"] = j["median_gb_per_s"];
  return j;
}

Json HostToDevice(bool pinned, uint64_t bytes, int reps) {
  Json j = BandwidthRecord(
      bytes, reps,
      pinned ? "cudaMemcpy host to device from pinned memory (cudaHostAlloc); GB/s is bytes "
               "copied per second"
             : "cudaMemcpy host to device from pageable memory (malloc, faulted in beforehand); "
               "GB/s is bytes copied per second");
  gpu::CopyBench bench;
  if (Status s = bench.Init(pinned, bytes); !s.ok()) return Unmeasured(j, s.message());
  double warmup = 0;  // the first copy maps and pins on the driver's side
  if (Status s = bench.Copy(&warmup); !s.ok()) return Unmeasured(j, s.message());
  j["device"] = gpu::Info();
  return Bandwidth(
      std::move(j), bytes, reps, [] { return std::string(); },
      [&](double* seconds) { return bench.Copy(seconds); });
}

Json FileMinorFault(const std::string& path, uint64_t bytes, int reps) {
  Json j = FaultRecord(bytes, reps,
                       "mmap PROT_READ, MAP_PRIVATE of the cached file, no advice, one byte "
                       "read per page");
  const uint64_t pages = bytes / PageBytes();
  j["us_per_page"] = nullptr;
  j["pages"] = pages;
  j["pages_per_fault"] = nullptr;
  j["major_faults"] = nullptr;
  j["resident"] = nullptr;
  if (const std::string why = WarmAndCheck(path, &j); !why.empty()) return Unmeasured(j, why);
  UniqueFd fd;
  if (Status s = OpenReadOnly(path, 0, &fd); !s.ok()) return Unmeasured(j, s.message());
  std::vector<FaultRep> done;
  for (int i = 0; i < reps; ++i) {
    if (Interrupted()) return Unmeasured(j, kInterrupted);
    Mapping m;
    if (Status s = MapPrivate(fd.get(), path, 0, bytes, 0, false, &m); !s.ok()) {
      return Unmeasured(j, s.message());
    }
    done.push_back(TouchCounted(m.mutable_data(), bytes, /*write=*/false));
  }
  NoteFreePageReporting(&j);
  const FaultRep t = *RecordFaultReps(done, &j);  // every repetition is kept: reps >= 1
  if (t.minor <= 0) return Unmeasured(j, "the kernel counted no fault");
  const double per_fault = static_cast<double>(pages) / static_cast<double>(t.minor);
  j["us_per_page"] = t.seconds / static_cast<double>(pages) * 1e6;
  j["pages_per_fault"] = per_fault;
  j["major_faults"] = t.major;
  j["note"] =
      per_fault >= 2
          ? fmt::format("one fault mapped {:.0f} pages on average: the page cache holds the file "
                        "in large folios and a read fault maps a whole folio plus the "
                        "fault-around window, so faults are far fewer than pages and "
                        "us_per_page, not us_per_fault, prices a mapped byte",
                        per_fault)
          : std::string("about one fault per page: no large folios or fault-around here");
  return j;
}

Json AnonFault4k(uint64_t bytes, int reps) {
  Json j = FaultRecord(bytes, reps,
                       "mmap of fresh anonymous memory, madvise(MADV_NOHUGEPAGE), one byte "
                       "written per page");
  j["gb_per_s"] = nullptr;
  std::vector<FaultRep> done;
  for (int i = 0; i < reps; ++i) {
    if (Interrupted()) return Unmeasured(j, kInterrupted);
    Mapping m;
    if (Status s = MapAnon(bytes, &m); !s.ok()) return Unmeasured(j, s.message());
    // Also keeps multi-size THP (Linux 6.8+) from backing the region with larger folios.
    if (::madvise(m.mutable_data(), bytes, MADV_NOHUGEPAGE) != 0) {
      return Unmeasured(j, fmt::format("madvise(MADV_NOHUGEPAGE): {}", std::strerror(errno)));
    }
    done.push_back(TouchCounted(m.mutable_data(), bytes, /*write=*/true));
  }
  NoteFreePageReporting(&j);
  const FaultRep t = *RecordFaultReps(done, &j);  // every repetition is kept: reps >= 1
  if (t.minor <= 0) return Unmeasured(j, "the kernel counted no fault");
  j["gb_per_s"] = static_cast<double>(bytes) / t.seconds / 1e9;
  return j;
}

Json ThpFault(uint64_t bytes, int reps) {
  Json j = FaultRecord(bytes, reps,
                       "mmap of fresh anonymous memory aligned to the huge page size, "
                       "madvise(MADV_HUGEPAGE), one byte written per base page");
  const std::string enabled = ThpSetting("enabled");
  const std::string defrag = ThpSetting("defrag");
  j["gb_per_s"] = nullptr;
  j["huge_page_bytes"] = nullptr;
  j["anon_huge_bytes"] = nullptr;
  j["granted_fraction"] = nullptr;
  j["thp_enabled"] = enabled;
  j["thp_defrag"] = defrag;
  if (enabled.empty()) return Unmeasured(j, fmt::format("{}enabled cannot be read", kThpDir));
  if (enabled == "never")
    return Unmeasured(j, fmt::format("THP is off: {}enabled is [never]", kThpDir));
  const uint64_t huge =
      std::strtoull(FirstWord(std::string(kThpDir) + "hpage_pmd_size").c_str(), nullptr, 10);
  if (huge == 0 || huge % PageBytes() != 0) {
    return Unmeasured(j, fmt::format("{}hpage_pmd_size cannot be read", kThpDir));
  }
  bytes = (bytes + huge - 1) / huge * huge;
  j["bytes"] = bytes;
  j["huge_page_bytes"] = huge;
  std::vector<FaultRep> done;
  for (int i = 0; i < reps; ++i) {
    if (Interrupted()) return Unmeasured(j, kInterrupted);
    // One huge page more than needed, so that an aligned region fits inside.
    Mapping m;
    if (Status s = MapAnon(bytes + huge, &m); !s.ok()) return Unmeasured(j, s.message());
    const auto addr = reinterpret_cast<uintptr_t>(m.mutable_data());
    std::byte* p = m.mutable_data() + (huge - addr % huge) % huge;
    if (::madvise(p, bytes, MADV_HUGEPAGE) != 0) {
      return Unmeasured(j, fmt::format("madvise(MADV_HUGEPAGE): {}", std::strerror(errno)));
    }
    const auto before = AnonHugeBytes();
    FaultRep t = TouchCounted(p, bytes, /*write=*/true);
    const auto after = AnonHugeBytes();
    if (!before || !after) return Unmeasured(j, "/proc/self/smaps_rollup has no AnonHugePages");
    t.huge_bytes = *after > *before ? *after - *before : 0;
    done.push_back(t);
  }
  return ThpFigures(std::move(j), done, bytes);
}

}  // namespace loadbench::probe
