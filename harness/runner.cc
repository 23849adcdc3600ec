#include "harness/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "harness/cache.h"
#include "harness/env.h"
#include "harness/interrupt.h"
#include "harness/results.h"
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
  bool interrupted = false;
};

// Forks and execs `loadbench worker`, reads its one-line record from a pipe, and reaps it with
// wait4 for its rusage. Kills it on timeout or interruption.
WorkerOutcome SpawnWorker(const std::string& exe, const std::string& file,
                          const std::string& strategy, double timeout_s) {
  WorkerOutcome out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.error = fmt::format("pipe: {}", std::strerror(errno));
    return out;
  }
  UniqueFd rd(fds[0]), wr(fds[1]);
  const auto t0 = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    out.error = fmt::format("fork: {}", std::strerror(errno));
    return out;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (::dup2(wr.get(), 3) < 0) ::_exit(127);  // dup2 clears O_CLOEXEC on fd 3
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    const char* argv[] = {exe.c_str(), "worker", "--file", file.c_str(), "--strategy",
                          strategy.c_str(), "--result-fd", "3", nullptr};
    ::execv(exe.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  wr.reset();

  std::string data;
  char buf[4096];
  bool killed = false;
  while (true) {
    pollfd p{rd.get(), POLLIN, 0};
    int pr = ::poll(&p, 1, 100);
    if (Interrupted() || (timeout_s > 0 && std::chrono::duration<double>(Clock::now() - t0).count() > timeout_s)) {
      ::kill(pid, SIGKILL);
      killed = true;
      out.interrupted = Interrupted();
      if (!out.interrupted) out.error = fmt::format("timed out after {:.0f} s; worker killed", timeout_s);
      break;
    }
    if (pr < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pr == 0) continue;
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  int wstatus = 0;
  while (::wait4(pid, &wstatus, 0, &out.usage) < 0 && errno == EINTR) {
  }
  out.process_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (killed) return out;
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    out.error = fmt::format("worker killed by signal {} ({})", sig, ::strsignal(sig));
    return out;
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
    out.error = fmt::format("could not execute {}", exe);
    return out;
  }
  try {
    out.record = nlohmann::ordered_json::parse(data);
  } catch (const std::exception&) {
    out.error = fmt::format("worker exited with status {} and no result",
                            WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
  }
  return out;
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

}  // namespace

int RunBenchmark(const RunOptions& options) {
  InstallInterruptHandlers();
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

  const bool root = ::geteuid() == 0;
  nlohmann::ordered_json env = CollectEnv(file);
  env["command_line"] = opts.command_line;
  env["experiment"] = opts.experiment;
  env["file"] = {{"path", file},
                 {"format", table.format},
                 {"file_bytes", table.file_size},
                 {"tensor_count", table.tensors.size()},
                 {"tensor_bytes", table.tensor_bytes}};
  env["cache_control"] = {
      {"drop_method", root ? "drop_caches" : "fadvise"},
      {"residency_method", ResidencyMethod()},
      {"note", root ? "sync; echo 3 > /proc/sys/vm/drop_caches before every cold run"
                    : "not root: /proc/sys/vm/drop_caches is not writable, so cold runs rely on "
                      "posix_fadvise(POSIX_FADV_DONTNEED) on the file; residency is still checked"}};
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

  const std::string exe = SelfExe();
  const std::string stamp = NowStamp("%Y%m%dT%H%M%S");
  const int total = opts.reps * static_cast<int>(opts.caches.size() * opts.strategies.size());
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
  int seq = 0;
  bool interrupted = false;
  const size_t n_strat = opts.strategies.size();
  for (int rep = 0; rep < opts.reps && !interrupted; ++rep) {
    for (const std::string& cache : opts.caches) {
      if (interrupted) break;
      for (size_t k = 0; k < n_strat && !interrupted; ++k) {
        // Rotate the order every repetition so that no strategy always runs first after a
        // state change, and drift on a shared machine hits all of them alike.
        const StrategySpec& spec = opts.strategies[(k + static_cast<size_t>(rep)) % n_strat];
        const StrategyInfo* info = FindStrategy(spec.name);
        Params params;
        Params::Resolve(spec.name, info->options, spec.options, &params);  // checked at parse

        ++seq;
        nlohmann::ordered_json r;
        r["run_id"] = fmt::format("{}-{:04d}", stamp, seq);
        r["experiment"] = opts.experiment;
        r["strategy"] = spec.name;
        r["strategy_spec"] = spec.text;
        r["params"] = params.ToJson();
        r["file"] = file;
        r["format"] = table.format;
        r["file_bytes"] = table.file_size;
        r["cache"] = cache;
        r["rep"] = rep;
        r["status"] = "failed";
        r["error"] = nullptr;
        r["checksum_ok"] = nullptr;
        for (const char* k2 : {"wall_s", "ready_s", "first_tensor_s", "open_s", "process_s",
                               "user_s", "sys_s",
                               "peak_rss_bytes", "major_faults", "minor_faults", "read_bytes",
                               "resident_before", "resident_after"}) {
          r[k2] = nullptr;
        }
        r["counters"] = nlohmann::ordered_json::object();
        r["started_at"] = NowStamp("%Y-%m-%dT%H:%M:%SZ");

        if (std::string why = info->unsupported_reason(); !why.empty()) {
          r["status"] = "unsupported";
          r["error"] = why;
        } else {
          DropMethod drop = root ? DropMethod::kDropCaches : DropMethod::kFadvise;
          Residency before;
          Status prep = Status::Ok();
          if (cache == "cold" && info->cleanup != nullptr) prep = info->cleanup(file);
          if (prep.ok()) prep = PrepareCache(file, cache, &drop, &before);
          if (!prep.ok()) {
            // A state that cannot be made or checked is not a failure of the strategy, but no
            // figure measured from it may count.
            r["status"] = "invalid";
            r["error"] = fmt::format("preparing the {} cache: {}", cache, prep.message());
          } else {
            r["resident_before"] = before.fraction();
            if (cache == "cold") r["drop_method"] = DropMethodName(drop);
            WorkerOutcome w = SpawnWorker(exe, file, spec.text, opts.timeout_s);
            if (w.interrupted) {
              interrupted = true;
              break;
            }
            for (auto& [key, value] : w.record.items()) r[key] = value;
            if (!w.error.empty()) {
              r["status"] = "failed";
              r["error"] = w.error;
            }
            r["process_s"] = w.process_s;
            r["user_s"] = TimevalSeconds(w.usage.ru_utime);
            r["sys_s"] = TimevalSeconds(w.usage.ru_stime);
            r["major_faults"] = w.usage.ru_majflt;
            r["minor_faults"] = w.usage.ru_minflt;
            Residency after;
            if (MeasureResidency(file, &after).ok()) r["resident_after"] = after.fraction();

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
        }

        s = runs_out.Append(r);
        if (!s.ok()) {
          fmt::print(stderr, "loadbench run: {}\n", s.message());
          return 1;
        }
        records.push_back(r);
        const std::string status = r["status"];
        std::string detail;
        if (status == "ok") {
          detail = fmt::format("{:.3f} s, {:.2f} GB/s, peak RSS {}", r["wall_s"].get<double>(),
                               table.file_size / r["wall_s"].get<double>() / 1e9,
                               FormatBytes(r["peak_rss_bytes"].is_number()
                                               ? r["peak_rss_bytes"].get<uint64_t>()
                                               : 0));
        } else {
          detail = r["error"].is_string() ? r["error"].get<std::string>() : "";
        }
        fmt::print(stderr, "[{}/{}] {} {} rep {}: {} {}\n", seq, total, cache, spec.text, rep,
                   status, detail);
      }
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
