#include "harness/runner.h"

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

#include "harness/cache.h"
#include "harness/counters.h"
#include "harness/env.h"
#include "harness/interrupt.h"
#include "harness/probe.h"
#include "harness/results.h"
#include "harness/timeline.h"
#include "loaders/checksum.h"
#include "loaders/file_io.h"
#include "loaders/format/format.h"
#include "loaders/units.h"

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

std::string NowStamp(const char* fmt_str) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt_str, &tm);
  return buf;
}

double TimevalSeconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

// What the parent learns about one worker process.
struct WorkerOutcome {
  nlohmann::ordered_json record;  // the worker's own line, or empty
  std::string error;              // why there is no usable record
  rusage usage{};
  double process_s = 0;
  std::vector<TimelineSample> timeline;
};

struct SpawnRequest {
  std::string exe, file, strategy, counters;
  std::string expect_checksum = "none";  // hex, for a file that stores no checksum
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
      out[i].error = fmt::format("worker killed by signal {} ({})", sig, ::strsignal(sig));
      continue;
    }
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
      out[i].error = fmt::format("could not execute {}", req.exe);
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

// What the runs of one file share, and where their records go.
struct RunSession {
  const RunOptions& opts;
  const std::string& file;
  const TensorTable& table;
  bool root;
  std::string stamp;  // run ids are <stamp>-<sequence>
  int total;          // runs planned, for the progress lines
  SpawnRequest spawn;
  JsonlWriter& out;
  std::vector<nlohmann::ordered_json>& records;
  int seq = 0;
};

// One run of `spec` (opts.procs workers at once) in the `cache` state, as repetition `rep`:
// prepares and checks the cache, spawns the workers, appends each worker's record to runs.jsonl
// and prints it. Interrupted (*interrupted set), it writes no record. Fails only when a record
// cannot be written.
Status MeasureRun(RunSession& rs, const StrategySpec& spec, const std::string& cache, int rep,
                  bool* interrupted) {
  const StrategyInfo* info = FindStrategy(spec.name);
  Params params;
  Params::Resolve(spec.name, info->options, spec.options, &params);  // checked at parse

  nlohmann::ordered_json base;
  base["run_id"] = nullptr;  // set per worker below: the first field, as in the contract
  base["experiment"] = rs.opts.experiment;
  base["strategy"] = spec.name;
  base["strategy_spec"] = spec.text;
  base["params"] = params.ToJson();
  base["file"] = rs.file;
  base["format"] = rs.table.format;
  base["file_bytes"] = rs.table.file_size;
  base["cache"] = cache;
  base["rep"] = rep;
  base["status"] = "failed";
  base["error"] = nullptr;
  base["checksum_ok"] = nullptr;
  for (const char* k2 : {"wall_s", "ready_s", "first_tensor_s", "open_s", "process_s",
                         "user_s", "sys_s",
                         "peak_rss_bytes", "major_faults", "minor_faults", "read_bytes",
                         "resident_before", "resident_after"}) {
    base[k2] = nullptr;
  }
  base["counters"] = nlohmann::ordered_json::object();
  base["memory"] = nlohmann::ordered_json::object();
  base["timeline"] = nullptr;
  if (rs.opts.procs > 1) base["procs"] = rs.opts.procs;
  base["started_at"] = NowStamp("%Y-%m-%dT%H:%M:%SZ");

  std::vector<nlohmann::ordered_json> batch(static_cast<size_t>(rs.opts.procs), base);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]["run_id"] = fmt::format("{}-{:04d}", rs.stamp, rs.seq + 1 + static_cast<int>(i));
  }
  if (std::string why = info->unsupported_reason(); !why.empty()) {
    for (auto& r : batch) {
      r["status"] = "unsupported";
      r["error"] = why;
    }
  } else {
    DropMethod drop = rs.root ? DropMethod::kDropCaches : DropMethod::kFadvise;
    Residency before;
    Status prep = Status::Ok();
    if (cache == "cold" && info->cleanup != nullptr) prep = info->cleanup(rs.file);
    if (prep.ok()) prep = PrepareCache(rs.file, cache, &drop, &before);
    if (!prep.ok()) {
      // A state that cannot be made or checked is not a failure of the strategy, but no
      // figure measured from it may count.
      for (auto& r : batch) {
        r["status"] = "invalid";
        r["error"] = fmt::format("preparing the {} cache: {}", cache, prep.message());
      }
    } else {
      rs.spawn.strategy = spec.text;
      const auto cached_before = PageCacheBytes();
      std::vector<WorkerOutcome> outcomes = SpawnWorkers(rs.spawn, interrupted);
      if (*interrupted) return Status::Ok();  // no record: the run did not finish
      const auto cached_after = PageCacheBytes();
      Residency after;
      const bool after_ok = MeasureResidency(rs.file, &after).ok();
      for (size_t i = 0; i < batch.size(); ++i) {
        nlohmann::ordered_json& r = batch[i];
        WorkerOutcome& w = outcomes[i];
        r["resident_before"] = before.fraction();
        if (cache == "cold") r["drop_method"] = DropMethodName(drop);
        for (auto& [key, value] : w.record.items()) r[key] = value;
        if (!w.error.empty()) {
          r["status"] = "failed";
          r["error"] = w.error;
        }
        if (rs.opts.procs > 1) r["proc"] = i;
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
        const double frac = before.fraction();
        if (r["status"] == "ok" && cache == "cold" && frac > kColdMaxResident) {
          r["status"] = "invalid";
          r["error"] = fmt::format("cold run started {:.1f}% resident (limit {:.0f}%)",
                                   frac * 100, kColdMaxResident * 100);
        } else if (r["status"] == "ok" && cache == "warm" && frac < kWarmMinResident) {
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
        Status t = MakeDirs(rs.opts.out_dir + "/timelines");
        if (t.ok()) t = WriteTimelineCsv(rs.opts.out_dir + "/" + rel, samples, zero);
        if (t.ok()) {
          batch[i]["timeline"] = rel;
        } else {
          fmt::print(stderr, "loadbench run: timeline: {}\n", t.message());
        }
      }
    }
  }

  for (nlohmann::ordered_json& r : batch) {
    ++rs.seq;
    r.erase("load_start_mono_s");
    LB_RETURN_IF_ERROR(rs.out.Append(r));
    rs.records.push_back(r);
    const std::string status = r["status"];
    std::string detail;
    if (status == "ok") {
      detail = fmt::format("{:.3f} s, {:.2f} GB/s, peak RSS {}", r["wall_s"].get<double>(),
                           rs.table.file_size / r["wall_s"].get<double>() / 1e9,
                           FormatBytes(r["peak_rss_bytes"].is_number()
                                           ? r["peak_rss_bytes"].get<uint64_t>()
                                           : 0));
    } else {
      detail = r["error"].is_string() ? r["error"].get<std::string>() : "";
    }
    fmt::print(stderr, "[{}/{}] {} {} rep {}{}: {} {}\n", rs.seq, rs.total, cache, spec.text, rep,
               rs.opts.procs > 1 ? fmt::format(" proc {}", r["proc"].get<int>()) : "",
               status, detail);
  }
  return Status::Ok();
}

}  // namespace

int RunBenchmark(const RunOptions& options) {
  InstallInterruptHandlers();
  // A worker that dies before its go byte must cost a failed write, not the runner.
  ::signal(SIGPIPE, SIG_IGN);
  RunOptions opts = options;
  if (opts.out_dir.empty()) opts.out_dir = "results/run-" + NowStamp("%Y%m%d-%H%M%S");
  // Validate everything before writing anything: a bad file leaves no results folder behind.
  TensorTable table;
  Status s = ReadTensorTableFromPath(opts.file, &table);
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}\n", s.message());
    return 2;
  }
  const std::string file = AbsolutePath(opts.file);
  // Every run checks the cache state; find out now, not after N invalid runs, if it cannot.
  Residency probe;
  s = MeasureResidency(file, &probe);
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}; run as root or on a copy of the file you own\n",
               s.message());
    return 2;
  }
  struct stat st {};
  if (::stat((opts.out_dir + "/runs.jsonl").c_str(), &st) == 0 && st.st_size > 0) {
    fmt::print(stderr, "loadbench run: {}: already holds results (runs.jsonl); choose another --out\n",
               opts.out_dir);
    return 2;
  }
  s = MakeDirs(opts.out_dir);
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}\n", s.message());
    return 2;
  }

  // A file that stores no checksum (safetensors and GGUF from other tools) is read once now
  // with plain preads; every run must then give the same checksum, so that all strategies of
  // the run are checked against one reference and against each other.
  std::string checksum_source = "stored in the file";
  if (!table.expected_checksum) {
    fmt::print(stderr, "loadbench run: {} stores no checksum; reading it once for the reference "
                       "checksum ({})\n", file, FormatBytes(table.tensor_bytes));
    const auto t0 = std::chrono::steady_clock::now();
    UniqueFd fd;
    uint64_t sum = 0;
    s = OpenReadOnly(file, 0, &fd);
    if (s.ok()) s = ChecksumFile(fd.get(), file, table, &sum);
    if (!s.ok()) {
      fmt::print(stderr, "loadbench run: {}\n", s.message());
      return s.exit_code();
    }
    table.expected_checksum = sum;
    checksum_source = fmt::format(
        "reference read by the runner before the runs (pread, {:.2f} s)",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  const bool root = ::geteuid() == 0;
  nlohmann::ordered_json env = CollectEnv(file);
  // The machine's ceilings, to read every figure of this run against: the last full probe of
  // this boot, or a quick memory-only one made now (before any cold run).
  env["probe"] = ProbeForRun(file);
  env["command_line"] = opts.command_line;
  env["experiment"] = opts.experiment;
  env["file"] = {{"path", file},
                 {"format", table.format},
                 {"file_bytes", table.file_size},
                 {"tensor_count", table.tensors.size()},
                 {"tensor_bytes", table.tensor_bytes},
                 {"checksum", fmt::format("{:016x}", *table.expected_checksum)},
                 {"checksum_source", checksum_source}};
  env["cache_control"] = {
      {"drop_method", root ? "drop_caches" : "fadvise"},
      {"residency_method", ResidencyMethod()},
      {"note", root ? "sync; echo 3 > /proc/sys/vm/drop_caches before every cold run"
                    : "not root: /proc/sys/vm/drop_caches is not writable, so cold runs rely on "
                      "posix_fadvise(POSIX_FADV_DONTNEED) on the file; residency is still checked"}};
  // Which counters count here, and why the others read null in every run: said once, here.
  env["counters"] = CounterAvailability(opts.counters);
  env["timeline"] = {{"interval_ms", opts.sample_ms},
                     {"residency_method", ResidencyMethod()},
                     {"sources", "/proc/PID/status (RSS by kind), /proc/PID/io (bytes read), "
                                 "/proc/PID/stat (faults), the file's page-cache residency"}};
  if (opts.procs > 1) env["procs"] = opts.procs;
  s = WriteJsonFile(opts.out_dir + "/env.json", env);
  JsonlWriter runs_out;
  if (s.ok()) s = runs_out.Open(opts.out_dir + "/runs.jsonl");
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}\n", s.message());
    return 2;
  }
  if (!root) {
    fmt::print(stderr,
               "loadbench run: not root: cold runs use posix_fadvise(DONTNEED) instead of "
               "drop_caches (recorded in env.json); each cold start is still checked\n");
  }

  const std::string stamp = NowStamp("%Y%m%dT%H%M%S");
  const int total =
      opts.reps * opts.procs * static_cast<int>(opts.caches.size() * opts.strategies.size());
  fmt::print(stderr, "loadbench run: {} ({}, {} tensors), {} runs -> {}\n", file,
             FormatBytes(table.file_size), table.tensors.size(), total, opts.out_dir);

  // What strategies leave behind (a shared segment) goes when the runner does, however it ends.
  struct CleanupGuard {
    const RunOptions& opts;
    std::string file;
    ~CleanupGuard() {
      for (const StrategySpec& spec : opts.strategies) {
        const StrategyInfo* info = FindStrategy(spec.name);
        if (info->cleanup == nullptr) continue;
        if (Status c = info->cleanup(file); !c.ok()) {
          fmt::print(stderr, "loadbench run: cleaning up after {}: {}\n", spec.name, c.message());
        }
      }
    }
  } cleanup_guard{opts, file};

  std::vector<nlohmann::ordered_json> records;
  bool interrupted = false;
  const size_t n_strat = opts.strategies.size();
  SpawnRequest spawn;
  spawn.exe = SelfExe();
  spawn.file = file;
  spawn.counters = opts.counters.empty() ? "none" : fmt::format("{}", fmt::join(opts.counters, ","));
  spawn.procs = opts.procs;
  spawn.timeout_s = opts.timeout_s;
  spawn.sample_s = opts.sample_ms / 1000.0;
  spawn.expect_checksum = fmt::format("{:016x}", *table.expected_checksum);
  RunSession session{opts, file, table, root, stamp, total, spawn, runs_out, records};
  for (int rep = 0; rep < opts.reps && !interrupted; ++rep) {
    for (const std::string& cache : opts.caches) {
      for (size_t k = 0; k < n_strat && !interrupted; ++k) {
        // Rotate the order every repetition so that no strategy always runs first after a
        // state change, and drift on a shared machine hits all of them alike.
        s = MeasureRun(session, opts.strategies[(k + static_cast<size_t>(rep)) % n_strat], cache,
                       rep, &interrupted);
        if (!s.ok()) {
          fmt::print(stderr, "loadbench run: {}\n", s.message());
          return 1;
        }
      }
      if (interrupted) break;
    }
  }

  fmt::print("\n{}", SummaryTable(records));
  fmt::print("results: {}/runs.jsonl ({} runs), {}/env.json\n", opts.out_dir, records.size(),
             opts.out_dir);
  if (interrupted || Interrupted()) {
    fmt::print(stderr, "loadbench run: interrupted after {} of {} runs; finished runs are kept in {}\n",
               records.size(), total, runs_out.path());
    return 130;
  }
  int bad = 0;
  for (const auto& r : records) {
    if (r["status"] == "failed" || r["status"] == "invalid") ++bad;
  }
  if (bad > 0) {
    fmt::print(stderr, "loadbench run: {} of {} runs failed or were invalid (see runs.jsonl)\n",
               bad, records.size());
    return 1;
  }
  return 0;
}

}  // namespace loadbench
