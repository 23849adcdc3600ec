// The first user access to fresh anonymous memory, by who populated it: the user's own write
// faults, or the kernel (MAP_POPULATE, MADV_POPULATE_WRITE, a read(2) into it, an O_DIRECT read
// into it). Each repetition maps fresh memory (4 KiB pages: MADV_NOHUGEPAGE where it can be
// given before population), times the population, then two passes writing one byte per page,
// with the faults the kernel counted in each.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "harness/probe/probe_measure.h"
#include "harness/process/interrupt.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
constexpr double kGiB = 1024.0 * 1024 * 1024;

volatile unsigned char g_first_touch_sink = 0;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

long MinorFaults() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

// One pass writing a byte per page: seconds and the minor faults it took.
std::pair<double, long> WritePass(unsigned char* p, size_t len) {
  const long f0 = MinorFaults();
  const auto t0 = Clock::now();
  for (size_t off = 0; off < len; off += 4096) static_cast<volatile unsigned char*>(p)[off] = 1;
  const double s = Since(t0);
  g_first_touch_sink = p[len / 2];
  return {s, MinorFaults() - f0};
}

// One repetition's figures.
struct Rep {
  double populate_s = 0, first_s = 0, second_s = 0;
  long populate_faults = 0, first_faults = 0;
};

// Reads `len` bytes of `fd` into `p` with pread(2), all of it; false with errno on failure.
bool ReadInto(int fd, unsigned char* p, size_t len) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Maps fresh memory and populates it as `how` says, timing only the population.
Status Populate(FirstTouchBy how, int fd, size_t len, unsigned char** out, Rep* r) {
  const int populate = how == FirstTouchBy::kMapPopulate ? MAP_POPULATE : 0;
  const long f0 = MinorFaults();
  auto t0 = Clock::now();
  void* m =
      ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0);
  if (m == MAP_FAILED) return Status::FromErrno("mmap of fresh anonymous memory", errno);
  *out = static_cast<unsigned char*>(m);
  if (how != FirstTouchBy::kMapPopulate) {
    // 4 KiB pages, as the loaders' malloc'd destinations get them; MAP_POPULATE fills the
    // mapping before any advice can be given.
    if (::madvise(m, len, MADV_NOHUGEPAGE) != 0) {
      return Status::FromErrno("MADV_NOHUGEPAGE", errno);
    }
    t0 = Clock::now();
  }
  bool ok = true;
  if (how == FirstTouchBy::kPopulateWrite) ok = ::madvise(m, len, MADV_POPULATE_WRITE) == 0;
  if (how == FirstTouchBy::kRead || how == FirstTouchBy::kDirectRead) {
    ok = ReadInto(fd, *out, len);
  }
  r->populate_s = Since(t0);
  r->populate_faults = MinorFaults() - f0;
  if (!ok) return Status::FromErrno(FirstTouchName(how), errno);
  return Status::Ok();
}

// The file `how` reads from, opened; none for the others.
Status OpenSource(FirstTouchBy how, const std::string& path, uint64_t bytes, UniqueFd* fd) {
  if (how != FirstTouchBy::kRead && how != FirstTouchBy::kDirectRead) return Status::Ok();
  if (how == FirstTouchBy::kRead) {
    Residency res;
    LB_RETURN_IF_ERROR(WarmFile(path));
    LB_RETURN_IF_ERROR(MeasureResidency(path, &res));
    if (res.fraction() < 0.99) {
      return Status::Failed(fmt::format("not warm: only {:.1f}% resident", res.fraction() * 100));
    }
  }
  LB_RETURN_IF_ERROR(OpenReadOnly(path, how == FirstTouchBy::kDirectRead ? O_DIRECT : 0, fd));
  uint64_t size = 0;
  LB_RETURN_IF_ERROR(FileSize(fd->get(), path, &size));
  if (size < bytes) return Status::Failed(fmt::format("{}: shorter than {} bytes", path, bytes));
  return Status::Ok();
}

Json Record(FirstTouchBy how, uint64_t bytes, int reps) {
  return {{"first_s_per_gib", nullptr},
          {"populate_s_per_gib", nullptr},
          {"second_s_per_gib", nullptr},
          {"first_faults", nullptr},
          {"populate_faults", nullptr},
          {"bytes", bytes},
          {"reps", reps},
          {"chosen", fmt::format("the repetition of median first pass, of {}", reps)},
          {"method", FirstTouchName(how)},
          {"access", "one byte written per 4 KiB page, twice"}};
}

}  // namespace

const char* FirstTouchName(FirstTouchBy how) {
  switch (how) {
    case FirstTouchBy::kUserWrite:
      return "user write faults";
    case FirstTouchBy::kMapPopulate:
      return "mmap(MAP_POPULATE)";
    case FirstTouchBy::kPopulateWrite:
      return "madvise(MADV_POPULATE_WRITE)";
    case FirstTouchBy::kRead:
      return "read(2) from the page cache into it";
    case FirstTouchBy::kDirectRead:
      return "O_DIRECT read(2) into it";
  }
  return "?";
}

Json FirstTouch(FirstTouchBy how, const std::string& path, uint64_t bytes, int reps) {
  Json j = Record(how, bytes, reps);
  auto unmeasured = [&j](const std::string& why) {
    j["reason"] = why;
    return j;
  };
  UniqueFd fd;
  if (Status s = OpenSource(how, path, bytes, &fd); !s.ok()) return unmeasured(s.message());
  std::vector<Rep> done;
  for (int i = 0; i < reps; ++i) {
    if (Interrupted()) return unmeasured("interrupted");
    unsigned char* p = nullptr;
    Rep r;
    const Status s = Populate(how, fd.get(), bytes, &p, &r);
    if (s.ok()) {
      std::tie(r.first_s, r.first_faults) = WritePass(p, bytes);
      r.second_s = WritePass(p, bytes).first;
    }
    if (p != nullptr) ::munmap(p, bytes);
    if (!s.ok()) return unmeasured(s.message());
    done.push_back(r);
  }
  std::sort(done.begin(), done.end(),
            [](const Rep& a, const Rep& b) { return a.first_s < b.first_s; });
  const Rep& m = done[done.size() / 2];
  const double gib = static_cast<double>(bytes) / kGiB;
  j["first_s_per_gib"] = m.first_s / gib;
  j["populate_s_per_gib"] = m.populate_s / gib;
  j["second_s_per_gib"] = m.second_s / gib;
  j["first_faults"] = m.first_faults;
  j["populate_faults"] = m.populate_faults;
  return j;
}

}  // namespace loadbench::probe
