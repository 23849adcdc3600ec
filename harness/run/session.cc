#include "harness/run/session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/probe/probe.h"
#include "harness/probe/probe_measure.h"
#include "harness/system/cache.h"
#include "harness/system/cgroup.h"
#include "harness/system/counters.h"
#include "harness/system/env.h"
#include "harness/system/interrupt.h"
#include "harness/system/timeline.h"
#include "loaders/format/model.h"
#include "harness/ranks/part.h"
#include "loaders/base/checksum.h"
#include "loaders/base/file_io.h"
#include "loaders/base/units.h"
#include "loaders/use/use.h"

namespace loadbench {

namespace {

using Clock = std::chrono::steady_clock;

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "loadbench";
  return std::string(buf, static_cast<size_t>(n));
}

std::string AbsolutePath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

}  // namespace

std::string NowStamp(const char* fmt_str) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt_str, &tm);
  return buf;
}

std::string NowUtcMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  ::gmtime_r(&ts.tv_sec, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, ts.tv_nsec / 1000000);
}

Status PrepareFile(const std::string& path, const std::string& who, PreparedFile* out) {
  PreparedFile f;
  LB_RETURN_IF_ERROR(ReadModel(path, &f.table));
  f.path = AbsolutePath(path);
  ModelResidency probe;
  if (Status s = MeasureModelResidency(f.table, &probe); !s.ok()) {
    return Status::BadInput(
        fmt::format("{}; run as root or on a copy of the file you own", s.message()));
  }
  f.checksum_source = "stored in the file";
  if (!f.table.expected_checksum) {
    // A file that stores no checksum (safetensors and GGUF from other tools) is read once now
    // with plain preads; every run must then give the same checksum, so that all strategies
    // are checked against one reference and against each other.
    fmt::print(stderr, "{}: {} stores no checksum; reading it once for the reference checksum "
                       "({})\n", who, f.path, FormatBytes(f.table.tensor_bytes));
    const auto t0 = Clock::now();
    uint64_t sum = 0;
    LB_RETURN_IF_ERROR(ChecksumModel(f.table, &sum));
    f.table.expected_checksum = sum;
    f.checksum_source =
        fmt::format("reference read by the runner before the runs (pread, {:.2f} s)",
                    std::chrono::duration<double>(Clock::now() - t0).count());
  }
  *out = std::move(f);
  return Status::Ok();
}

namespace {

nlohmann::ordered_json ShardsJson(const TensorTable& t) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ShardInfo& s : t.shards) {
    out.push_back({{"path", s.path}, {"file_bytes", s.file_size}, {"tensor_count", s.tensor_count},
                   {"tensor_bytes", s.tensor_bytes}});
  }
  return out;
}

}  // namespace

nlohmann::ordered_json FileEnv(const PreparedFile& f) {
  return {{"path", f.path},
          {"format", f.table.format},
          {"file_bytes", f.table.file_size},
          {"tensor_count", f.table.tensors.size()},
          {"tensor_bytes", f.table.tensor_bytes},
          {"checksum", fmt::format("{:016x}", *f.table.expected_checksum)},
          {"checksum_source", f.checksum_source},
          {"layout", f.table.layout},
          {"shards", ShardsJson(f.table)}};
}

void AddMeasurementEnv(const std::string& file, const std::vector<std::string>& counters,
                       double sample_ms, nlohmann::ordered_json* env) {
  const bool root = ::geteuid() == 0;
  // The machine's ceilings, to read every figure against: the last full probe of this boot,
  // or a quick memory-only one made now (before any cold run).
  (*env)["probe"] = ProbeForRun(file);
  (*env)["cache_control"] = {
      {"drop_method", root ? "drop_caches" : "fadvise"},
      {"residency_method", ResidencyMethod()},
      {"note", root
                   ? "sync; echo 3 > /proc/sys/vm/drop_caches before every cold run"
                   : "not root: /proc/sys/vm/drop_caches is not writable, so cold runs rely on "
                     "posix_fadvise(POSIX_FADV_DONTNEED) on the file; residency is still checked"}};
  // Which counters count here, and why the others read null in every run: said once, here.
  (*env)["counters"] = CounterAvailability(counters);
  (*env)["timeline"] = {{"interval_ms", sample_ms},
                        {"residency_method", ResidencyMethod()},
                        {"sources", "/proc/PID/status (RSS by kind), /proc/PID/io (bytes read), "
                                    "/proc/PID/stat (faults), the file's page-cache residency"}};
  const std::string why = MemoryCgroupUnsupportedReason();
  (*env)["memory_cgroup"] = why.empty() ? nlohmann::ordered_json{{"supported", true}}
                                        : nlohmann::ordered_json{{"supported", false},
                                                                 {"reason", why}};
}

RunPoint PointOf(const Experiment& e, const ExperimentRun& r) {
  RunPoint p;
  if (r.strategy == e.strategies.size()) {
    p.spec = CeilingRunSpec();
  } else {
    const ExperimentStrategy& st = e.strategies[r.strategy];
    p.spec = st.spec;
    p.unsupported = st.unsupported;
    p.exec = st.exec;
  }
  p.position = r.position;
  p.cache = r.cache;
  p.rep = r.rep;
  p.procs = r.procs;
  p.pattern = r.pattern;
  p.memory_limit = r.memory_limit;
  return p;
}

std::string PartsKey(const std::string& pattern, int readers) {
  return fmt::format("{}/{}", pattern, readers);
}

Status PrepareParts(const std::string& pattern, int readers, PreparedFile* f) {
  const std::string key = PartsKey(pattern, readers);
  if (readers <= 1 || pattern == "replicated" || f->part_checksums.count(key)) {
    return Status::Ok();
  }
  ReadPattern p;
  LB_RETURN_IF_ERROR(ParsePattern(pattern, &p));
  std::vector<uint64_t> sums;
  for (int k = 0; k < readers; ++k) {
    TensorTable part;
    LB_RETURN_IF_ERROR(PartOf(f->path, f->table, p, k, readers, &part));
    uint64_t sum = 0;
    LB_RETURN_IF_ERROR(ChecksumModel(part, &sum));
    sums.push_back(sum);
  }
  f->part_checksums[key] = std::move(sums);
  return Status::Ok();
}

std::string RecordedPath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  return ec ? path : p.string();
}

std::string RunKey(const std::string& file, const RunPoint& p) {
  // Replicated is every record's pattern from before patterns: its key is unchanged.
  return fmt::format("{}|{}|{}|{}|{}|{}{}", file, p.spec.text, p.cache, p.rep, p.procs,
                     p.memory_limit, p.pattern == "replicated" ? "" : "|" + p.pattern);
}

std::string RunKey(const nlohmann::ordered_json& r) {
  RunPoint p;
  p.spec.text = r.value("strategy_spec", "");
  p.cache = r.value("cache", "");
  p.rep = r.value("rep", -1);
  p.procs = r.value("procs", 1);
  p.pattern = r.value("pattern", "replicated");
  const auto limit = r.find("memory_limit_bytes");
  p.memory_limit = limit != r.end() && limit->is_number() ? limit->get<uint64_t>() : 0;
  return RunKey(r.value("file", ""), p);
}

void StartSession(RunSession* rs) {
  InstallInterruptHandlers();
  // A worker that dies before its go byte must cost a failed write, not the runner.
  ::signal(SIGPIPE, SIG_IGN);
  rs->exe = SelfExe();
  rs->root = ::geteuid() == 0;
  rs->stamp = NowStamp("%Y%m%dT%H%M%S");
}

void CleanupStrategies(const std::vector<StrategySpec>& specs, const std::string& file,
                       const std::string& who) {
  for (const StrategySpec& spec : specs) {
    const StrategyInfo* info = FindStrategy(spec.name);
    if (info == nullptr || info->cleanup == nullptr) continue;
    std::vector<std::string> removed;
    if (Status c = info->cleanup(file, &removed); !c.ok()) {
      fmt::print(stderr, "{}: cleaning up after {}: {}\n", who, spec.name, c.message());
    }
  }
}

int CountBad(const std::vector<RunRecord>& records) {
  int bad = 0;
  for (const auto& r : records) {
    if (r.status == "failed" || r.status == "invalid") ++bad;
  }
  return bad;
}

StrategySpec CeilingRunSpec() {
  StrategySpec s;
  s.name = s.text = kCeiling;
  return s;
}

}  // namespace loadbench
