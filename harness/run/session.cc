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
#include <fstream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/system/cache.h"
#include "harness/system/cgroup.h"
#include "harness/system/counters.h"
#include "harness/system/env.h"
#include "harness/system/interrupt.h"
#include "harness/probe/probe.h"
#include "harness/probe/probe_measure.h"
#include "harness/system/timeline.h"
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

double TimevalSeconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

// What the parent learns about one worker process.
struct WorkerOutcome {
  nlohmann::ordered_json record;  // the worker's own line, or empty
  std::string error;              // why there is no usable record
  rusage usage{};
  double process_s = 0;
  std::vector<TimelineSample> timeline;
  int signal = 0;  // the signal that killed the worker, when one did
};

struct SpawnRequest {
  std::string exe, file, strategy, counters;
  std::string expect_checksum = "none";  // hex, for a file that stores no checksum
  std::string cgroup_procs;  // the memory cgroup's procs file the workers join; "" for none
  int procs = 1;
  double timeout_s = 0;
  double sample_s = 0;  // 0: no timeline
};

// One started worker, as the parent tracks it.
struct Child {
  pid_t pid = -1;
  UniqueFd result;  // the read end of the worker's result pipe
  UniqueFd hold;    // the write end of its hold pipe (several workers only)
  std::string data;
  bool open = true;  // result pipe not at EOF yet
  bool loaded = false, measured = false;  // the worker's hold stages (several workers only)
  std::unique_ptr<TimelineSampler> sampler;
};

// Forks and execs one `loadbench worker`.
Status StartChild(const SpawnRequest& req, Child* c) {
  int fds[2], hold[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  c->result.reset(fds[0]);
  UniqueFd wr(fds[1]), hold_rd;
  if (req.procs > 1) {
    if (::pipe2(hold, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
    hold_rd.reset(hold[0]);
    c->hold.reset(hold[1]);
  }
  const std::string hold_arg = req.procs > 1 ? "4" : "-1";
  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    // The OOM killer must pick a worker, never the harness that records its death.
    SetOomScoreAdjFromChild(1000);
    if (!req.cgroup_procs.empty() && !JoinCgroupFromChild(req.cgroup_procs.c_str())) ::_exit(126);
    if (::dup2(wr.get(), 3) < 0) ::_exit(127);  // dup2 clears O_CLOEXEC
    if (hold_rd.valid() && ::dup2(hold_rd.get(), 4) < 0) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    const char* argv[] = {req.exe.c_str(), "worker",     "--file",       req.file.c_str(),
                          "--strategy",    req.strategy.c_str(),        "--result-fd",
                          "3",             "--counters", req.counters.c_str(),
                          "--hold-fd",     hold_arg.c_str(),            "--expect-checksum",
                          req.expect_checksum.c_str(),                  nullptr};
    ::execv(req.exe.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  c->pid = pid;
  if (req.sample_s > 0) c->sampler = std::make_unique<TimelineSampler>(pid, req.file);
  return Status::Ok();
}

// Starts `req.procs` workers at once, samples their timelines, reads each one's record from its
// pipe, and reaps each with wait4 for its rusage. Several workers are held after their loads
// until all have loaded, so that their memory (shared pages, PSS) is measured side by side.
// Kills them all on timeout or interruption (*interrupted tells which).
std::vector<WorkerOutcome> SpawnWorkers(const SpawnRequest& req, bool* interrupted) {
  std::vector<WorkerOutcome> out(static_cast<size_t>(req.procs));
  std::vector<Child> children(static_cast<size_t>(req.procs));
  const auto t0 = Clock::now();
  for (size_t i = 0; i < children.size(); ++i) {
    if (Status s = StartChild(req, &children[i]); !s.ok()) {
      out[i].error = s.message();
      children[i].open = false;
    }
  }
  char buf[4096];
  bool killed = false, released = req.procs == 1;
  auto next_sample = Clock::now();
  while (true) {
    std::vector<pollfd> polls;
    std::vector<size_t> who;
    for (size_t i = 0; i < children.size(); ++i) {
      if (children[i].open) {
        polls.push_back({children[i].result.get(), POLLIN, 0});
        who.push_back(i);
      }
    }
    if (polls.empty()) break;
    if (req.sample_s > 0 && Clock::now() >= next_sample) {
      for (auto& c : children) {
        if (c.sampler) c.sampler->Sample();
      }
      next_sample += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(req.sample_s));
    }
    int wait_ms = 100;
    if (req.sample_s > 0) {
      const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(
          next_sample - Clock::now());
      wait_ms = std::clamp(static_cast<int>(until.count()), 0, 100);
    }
    const int pr = ::poll(polls.data(), polls.size(), wait_ms);
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    if (Interrupted() || (req.timeout_s > 0 && elapsed > req.timeout_s)) {
      for (auto& c : children) {
        if (c.pid > 0) ::kill(c.pid, SIGKILL);
      }
      killed = true;
      *interrupted = Interrupted();
      for (size_t i = 0; i < out.size(); ++i) {
        if (!*interrupted && children[i].open) {
          out[i].error = fmt::format("timed out after {:.0f} s; worker killed", req.timeout_s);
        }
      }
      break;
    }
    if (pr < 0 && errno != EINTR) break;
    for (size_t k = 0; pr > 0 && k < polls.size(); ++k) {
      if (polls[k].revents == 0) continue;
      Child& c = children[who[k]];
      const ssize_t n = ::read(c.result.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        c.open = false;
        continue;
      }
      c.data.append(buf, static_cast<size_t>(n));
      for (auto [stage, flag] : {std::pair<std::string_view, bool*>{"loaded\n", &c.loaded},
                                 {"measured\n", &c.measured}}) {
        if (!*flag && c.data.starts_with(stage)) {
          *flag = true;
          c.data.erase(0, stage.size());
        }
      }
    }
    // Two barriers for several workers: all loaded -> one byte each (measure your memory now);
    // all measured -> EOF (tear down and report).
    if (!released) {
      bool all = true;
      for (const auto& c : children) all = all && (c.loaded || !c.open);
      if (all) {
        for (auto& c : children) {
          if (c.hold.valid() && ::write(c.hold.get(), "g", 1) != 1) c.hold.reset();
        }
        released = true;
      }
    } else if (req.procs > 1) {
      bool all = true;
      for (const auto& c : children) all = all && (c.measured || !c.open);
      if (all) {
        for (auto& c : children) c.hold.reset();
      }
    }
  }
  for (size_t i = 0; i < children.size(); ++i) {
    Child& c = children[i];
    if (c.sampler) out[i].timeline = c.sampler->samples();
    if (c.pid <= 0) continue;
    int wstatus = 0;
    while (::wait4(c.pid, &wstatus, 0, &out[i].usage) < 0 && errno == EINTR) {
    }
    out[i].process_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (killed || !out[i].error.empty()) continue;
    if (WIFSIGNALED(wstatus)) {
      const int sig = WTERMSIG(wstatus);
      out[i].signal = sig;
      out[i].error = fmt::format("worker killed by signal {} ({})", sig, ::strsignal(sig));
      continue;
    }
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
      out[i].error = fmt::format("could not execute {}", req.exe);
      continue;
    }
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 126 && !req.cgroup_procs.empty()) {
      out[i].error = fmt::format("the worker could not join its memory cgroup ({})",
                                 req.cgroup_procs);
      continue;
    }
    try {
      out[i].record = nlohmann::ordered_json::parse(c.data);
    } catch (const std::exception&) {
      out[i].error = fmt::format("worker exited with status {} and no result",
                                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    }
  }
  return out;
}

// The page cache as a whole, in bytes (Cached in /proc/meminfo).
std::optional<uint64_t> PageCacheBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "Cached:") return kib * 1024;
  }
  return std::nullopt;
}

// Puts the file into the cache state `cache` and reports how resident it is now.
Status PrepareCache(const std::string& file, const std::string& cache, DropMethod* drop,
                    Residency* before) {
  if (cache == "cold") {
    LB_RETURN_IF_ERROR(DropFileCache(file, drop));
  } else {
    LB_RETURN_IF_ERROR(WarmFile(file));
  }
  return MeasureResidency(file, before);
}


// Kills by the OOM killer since `before` (a cgroup's count when the run had one, else the
// machine's), or nullopt when the kernel does not count them.
std::optional<uint64_t> OomKillsSince(const MemoryCgroup* cg, std::optional<uint64_t> before) {
  const std::optional<uint64_t> now = cg != nullptr ? cg->OomKills() : SystemOomKills();
  if (!now) return std::nullopt;
  return *now - (cg != nullptr ? 0 : before.value_or(*now));
}

nlohmann::ordered_json Nullable(std::optional<uint64_t> v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
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

Status PrepareFile(const std::string& path, const std::string& who, PreparedFile* out) {
  PreparedFile f;
  LB_RETURN_IF_ERROR(ReadTensorTableFromPath(path, &f.table));
  f.path = AbsolutePath(path);
  Residency probe;
  if (Status s = MeasureResidency(f.path, &probe); !s.ok()) {
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
    UniqueFd fd;
    uint64_t sum = 0;
    LB_RETURN_IF_ERROR(OpenReadOnly(f.path, 0, &fd));
    LB_RETURN_IF_ERROR(ChecksumFile(fd.get(), f.path, f.table, &sum));
    f.table.expected_checksum = sum;
    f.checksum_source =
        fmt::format("reference read by the runner before the runs (pread, {:.2f} s)",
                    std::chrono::duration<double>(Clock::now() - t0).count());
  }
  *out = std::move(f);
  return Status::Ok();
}

nlohmann::ordered_json FileEnv(const PreparedFile& f) {
  return {{"path", f.path},
          {"format", f.table.format},
          {"file_bytes", f.table.file_size},
          {"tensor_count", f.table.tensors.size()},
          {"tensor_bytes", f.table.tensor_bytes},
          {"checksum", fmt::format("{:016x}", *f.table.expected_checksum)},
          {"checksum_source", f.checksum_source}};
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

std::string RunKey(const std::string& file, const RunPoint& p) {
  return fmt::format("{}|{}|{}|{}|{}|{}", file, p.spec.text, p.cache, p.rep, p.procs,
                     p.memory_limit);
}

std::string RunKey(const nlohmann::ordered_json& r) {
  RunPoint p;
  p.spec.text = r.value("strategy_spec", "");
  p.cache = r.value("cache", "");
  p.rep = r.value("rep", -1);
  p.procs = r.value("procs", 1);
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
    if (Status c = info->cleanup(file); !c.ok()) {
      fmt::print(stderr, "{}: cleaning up after {}: {}\n", who, spec.name, c.message());
    }
  }
}

int CountBad(const std::vector<nlohmann::ordered_json>& records) {
  int bad = 0;
  for (const auto& r : records) {
    if (r["status"] == "failed" || r["status"] == "invalid") ++bad;
  }
  return bad;
}

StrategySpec CeilingRunSpec() {
  StrategySpec s;
  s.name = s.text = kCeiling;
  return s;
}

namespace {

// The fields every record of `p` starts with, in the contract's order.
nlohmann::ordered_json BaseRecord(const RunSession& rs, const PreparedFile& file,
                                  const RunPoint& p) {
  nlohmann::ordered_json base;
  base["run_id"] = nullptr;  // set per worker: the first field, as in the contract
  base["experiment"] = rs.experiment;
  base["strategy"] = p.spec.name;
  base["strategy_spec"] = p.spec.text;
  base["params"] = nlohmann::ordered_json::object();
  base["use"] = nullptr;
  if (std::string label; LabelOf(p.spec, &label).ok() && !label.empty()) base["label"] = label;
  base["file"] = file.path;
  base["format"] = file.table.format;
  base["file_bytes"] = file.table.file_size;
  base["cache"] = p.cache;
  base["rep"] = p.rep;
  if (p.position >= 0) base["position"] = p.position;
  base["status"] = "failed";
  base["error"] = nullptr;
  base["checksum_ok"] = nullptr;
  return base;
}

// Appends the records of one run to runs.jsonl and logs them.
Status Record(RunSession& rs, const PreparedFile& file, const RunPoint& p,
              std::vector<nlohmann::ordered_json>& batch) {
  for (nlohmann::ordered_json& r : batch) {
    ++rs.seq;
    ++rs.done;
    r.erase("load_start_mono_s");
    LB_RETURN_IF_ERROR(rs.out->Append(r));
    rs.records.push_back(r);
    if (!rs.log) continue;
    const std::string status = r["status"];
    std::string detail;
    if (status == "ok" && p.spec.name == kCeiling) {
      detail = fmt::format("{:.3f} s, {:.2f} GB/s: the device now", r["wall_s"].get<double>(),
                           r["gb_per_s"].get<double>());
    } else if (status == "ok") {
      detail = fmt::format("{:.3f} s, {:.2f} GB/s, peak RSS {}", r["wall_s"].get<double>(),
                           file.table.file_size / r["wall_s"].get<double>() / 1e9,
                           FormatBytes(r["peak_rss_bytes"].is_number()
                                           ? r["peak_rss_bytes"].get<uint64_t>()
                                           : 0));
    } else {
      detail = r["error"].is_string() ? r["error"].get<std::string>() : "";
    }
    fmt::print(stderr, "{}[{}/{}] {} {} rep {}{}{}: {} {}\n", rs.clear_line ? "\r\033[K" : "",
               rs.done, rs.total, p.cache, p.spec.text, p.rep,
               p.memory_limit > 0 ? fmt::format(" limit {}", FormatBytes(p.memory_limit)) : "",
               p.procs > 1 ? fmt::format(" proc {}", r["proc"].get<int>()) : "", status, detail);
  }
  return Status::Ok();
}

// The ceiling run, in this process (its buffers are 32 MiB): the probe's cold direct read of
// the file's whole MiBs, which drops the file's pages and checks them gone first.
Status MeasureCeiling(RunSession& rs, const PreparedFile& file, const RunPoint& p,
                      bool* interrupted) {
  nlohmann::ordered_json r = BaseRecord(rs, file, p);
  r["run_id"] = fmt::format("{}-{:04d}", rs.stamp, rs.seq + 1);
  r["params"] = {{"queue_depth", probe::kQueueDepth}, {"block_bytes", probe::kBlockBytes},
                 {"direct", "on"}};
  r["wall_s"] = nullptr;
  r["ceiling_bytes"] = nullptr;
  r["gb_per_s"] = nullptr;
  if (p.procs > 1) r["procs"] = p.procs;
  if (p.memory_limit > 0) r["memory_limit_bytes"] = p.memory_limit;
  r["started_at"] = NowStamp("%Y-%m-%dT%H:%M:%SZ");
  const uint64_t bytes = file.table.file_size / probe::kBlockBytes * probe::kBlockBytes;
  UniqueFd direct;
  if (bytes == 0) {
    r["status"] = "unsupported";
    r["error"] = "the file is smaller than one 1 MiB request";
  } else if (Status s = OpenReadOnly(file.path, O_DIRECT, &direct); !s.ok()) {
    r["status"] = "unsupported";
    r["error"] = fmt::format("O_DIRECT: {}", s.message());
  } else {
    direct.reset();
    const nlohmann::ordered_json m = probe::ColdDirectRead(file.path, bytes, 1);
    if (Interrupted()) {
      *interrupted = true;
      return Status::Ok();  // no record: the run did not finish
    }
    const auto g = m.find("gb_per_s");
    if (g != m.end() && g->is_number() && g->get<double>() > 0) {
      r["status"] = "ok";
      r["wall_s"] = static_cast<double>(bytes) / (g->get<double>() * 1e9);
      r["ceiling_bytes"] = bytes;
      r["gb_per_s"] = *g;
    } else {
      r["error"] = m.value("reason", "the ceiling read gave no figure");
    }
  }
  std::vector<nlohmann::ordered_json> batch = {std::move(r)};
  return Record(rs, file, p, batch);
}

}  // namespace

Status MeasureRun(RunSession& rs, const PreparedFile& file, const RunPoint& p,
                  bool* interrupted) {
  if (p.spec.name == kCeiling) return MeasureCeiling(rs, file, p, interrupted);
  const StrategyInfo* info = FindStrategy(p.spec.name);
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  nlohmann::ordered_json use = nullptr;
  std::string unsupported = p.unsupported;
  if (info == nullptr && unsupported.empty()) {
    unsupported = NotBuiltReason(p.spec.name);
  }
  if (info != nullptr) {
    Params resolved;
    UseOptions resolved_use;
    Status s = ResolveSpec(*info, p.spec, &resolved, &resolved_use);
    if (s.ok()) params = resolved.ToJson(), use = resolved_use.ToJson();
    if (!s.ok() && unsupported.empty()) unsupported = s.message();
    if (unsupported.empty()) unsupported = info->unsupported_reason();
  }
  if (info == nullptr || params.empty()) {
    for (const auto& [k, v] : p.spec.options) params[k] = v;  // as asked, for the record
  }

  nlohmann::ordered_json base = BaseRecord(rs, file, p);
  base["params"] = params;
  base["use"] = use;
  for (const char* k2 : {"wall_s", "ready_s", "first_use_s", "open_s", "process_s",
                         "user_s", "sys_s",
                         "peak_rss_bytes", "major_faults", "minor_faults", "read_bytes",
                         "resident_before", "resident_after"}) {
    base[k2] = nullptr;
  }
  base["counters"] = nlohmann::ordered_json::object();
  base["memory"] = nlohmann::ordered_json::object();
  base["timeline"] = nullptr;
  if (p.procs > 1) base["procs"] = p.procs;
  if (p.memory_limit > 0) base["memory_limit_bytes"] = p.memory_limit;
  base["started_at"] = NowStamp("%Y-%m-%dT%H:%M:%SZ");

  std::vector<nlohmann::ordered_json> batch(static_cast<size_t>(p.procs), base);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]["run_id"] = fmt::format("{}-{:04d}", rs.stamp, rs.seq + 1 + static_cast<int>(i));
  }
  if (!unsupported.empty()) {
    for (auto& r : batch) {
      r["status"] = "unsupported";
      r["error"] = unsupported;
    }
  } else {
    DropMethod drop = rs.root ? DropMethod::kDropCaches : DropMethod::kFadvise;
    Residency before;
    Status prep = Status::Ok();
    // The cgroup first: where none can be made, the run is unsupported before any work.
    std::unique_ptr<MemoryCgroup> cgroup;
    if (p.memory_limit > 0) prep = MemoryCgroup::Create(p.memory_limit, &cgroup);
    if (prep.ok() && p.cache == "cold" && info->cleanup != nullptr) prep = info->cleanup(file.path);
    if (prep.ok()) prep = PrepareCache(file.path, p.cache, &drop, &before);
    if (prep.code() == Status::Code::kUnsupported) {
      for (auto& r : batch) {  // no memory cgroup can be made here
        r["status"] = "unsupported";
        r["error"] = prep.message();
      }
    } else if (!prep.ok()) {
      // A state that cannot be made or checked is not a failure of the strategy, but no
      // figure measured from it may count.
      for (auto& r : batch) {
        r["status"] = "invalid";
        r["error"] = fmt::format("preparing the {} run: {}", p.cache, prep.message());
      }
    } else {
      SpawnRequest spawn;
      spawn.exe = rs.exe;
      spawn.file = file.path;
      spawn.strategy = p.spec.text;
      spawn.counters =
          rs.counters.empty() ? "none" : fmt::format("{}", fmt::join(rs.counters, ","));
      spawn.expect_checksum = fmt::format("{:016x}", *file.table.expected_checksum);
      spawn.cgroup_procs = cgroup ? cgroup->procs_path() : "";
      spawn.procs = p.procs;
      spawn.timeout_s = rs.timeout_s;
      spawn.sample_s = rs.sample_ms / 1000.0;
      const auto cached_before = PageCacheBytes();
      const auto oom_before = SystemOomKills();
      std::vector<WorkerOutcome> outcomes = SpawnWorkers(spawn, interrupted);
      if (*interrupted) return Status::Ok();  // no record: the run did not finish
      const auto cached_after = PageCacheBytes();
      const auto oom_kills = OomKillsSince(cgroup.get(), oom_before);
      Residency after;
      const bool after_ok = MeasureResidency(file.path, &after).ok();
      for (size_t i = 0; i < batch.size(); ++i) {
        nlohmann::ordered_json& r = batch[i];
        WorkerOutcome& w = outcomes[i];
        r["resident_before"] = before.fraction();
        if (p.cache == "cold") r["drop_method"] = DropMethodName(drop);
        for (auto& [key, value] : w.record.items()) r[key] = value;
        if (!w.error.empty()) {
          r["status"] = "failed";
          r["error"] = w.error;
          // SIGKILL with the OOM killer's count up over the run: it was the OOM killer.
          if (w.signal == SIGKILL && oom_kills.value_or(0) > 0) {
            r["error"] = p.memory_limit > 0
                             ? fmt::format("killed by the OOM killer (SIGKILL) at the memory "
                                           "limit of {}", FormatBytes(p.memory_limit))
                             : std::string("killed by the OOM killer (SIGKILL): out of memory");
            r["oom_killed"] = true;
          }
        }
        if (p.procs > 1) r["proc"] = i;
        r["process_s"] = w.process_s;
        r["user_s"] = TimevalSeconds(w.usage.ru_utime);
        r["sys_s"] = TimevalSeconds(w.usage.ru_stime);
        r["major_faults"] = w.usage.ru_majflt;
        r["minor_faults"] = w.usage.ru_minflt;
        if (after_ok) r["resident_after"] = after.fraction();
        // The page cache's growth over the run: the file's own pages, and the whole
        // cache (which other activity on the machine moves too).
        if (after_ok) {
          r["memory"]["file_cache_growth_bytes"] =
              (static_cast<int64_t>(after.resident_pages) -
               static_cast<int64_t>(before.resident_pages)) * 4096;
        }
        if (cached_before && cached_after) {
          r["memory"]["page_cache_growth_bytes"] =
              static_cast<int64_t>(*cached_after) - static_cast<int64_t>(*cached_before);
        }
        if (cgroup) {
          // What the container was charged: its workers' anonymous memory and page cache.
          r["memory"]["cgroup_peak_bytes"] = Nullable(cgroup->PeakBytes());
          r["memory"]["cgroup_oom_kills"] = Nullable(oom_kills);
        }
        const double frac = before.fraction();
        if (r["status"] == "ok" && p.cache == "cold" && frac > kColdMaxResident) {
          r["status"] = "invalid";
          r["error"] = fmt::format("cold run started {:.1f}% resident (limit {:.0f}%)",
                                   frac * 100, kColdMaxResident * 100);
        } else if (r["status"] == "ok" && p.cache == "warm" && frac < kWarmMinResident) {
          r["status"] = "invalid";
          r["error"] = fmt::format("warm run started only {:.1f}% resident (need {:.0f}%)",
                                   frac * 100, kWarmMinResident * 100);
        }
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        const auto& samples = outcomes[i].timeline;
        const auto start = batch[i].find("load_start_mono_s");
        if (samples.empty()) continue;
        const double zero = start != batch[i].end() && start->is_number()
                                ? start->get<double>()
                                : samples.front().mono_s;
        const std::string rel =
            fmt::format("timelines/{}.csv", batch[i]["run_id"].get<std::string>());
        Status t = MakeDirs(rs.out_dir + "/timelines");
        if (t.ok()) t = WriteTimelineCsv(rs.out_dir + "/" + rel, samples, zero);
        if (t.ok()) {
          batch[i]["timeline"] = rel;
        } else {
          fmt::print(stderr, "loadbench: timeline: {}\n", t.message());
        }
      }
    }
  }

  return Record(rs, file, p, batch);
}

}  // namespace loadbench
