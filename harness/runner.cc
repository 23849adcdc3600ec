#include "harness/runner.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include "harness/counters.h"
#include "harness/env.h"
#include "harness/interrupt.h"
#include "harness/results.h"
#include "loaders/units.h"

namespace loadbench {

int RunBenchmark(const RunOptions& options) {
  RunOptions opts = options;
  if (opts.out_dir.empty()) opts.out_dir = "results/run-" + NowStamp("%Y%m%d-%H%M%S");
  // Validate everything before writing anything: a bad file leaves no results folder behind.
  struct stat st {};
  if (::stat((opts.out_dir + "/runs.jsonl").c_str(), &st) == 0 && st.st_size > 0) {
    fmt::print(stderr,
               "loadbench run: {}: already holds results (runs.jsonl); choose another --out\n",
               opts.out_dir);
    return 2;
  }
  PreparedFile file;
  Status s = PrepareFile(opts.file, "loadbench run", &file);
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}\n", s.message());
    return 2;
  }
  s = MakeDirs(opts.out_dir);
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}\n", s.message());
    return 2;
  }

  RunSession rs;
  StartSession(&rs);
  nlohmann::ordered_json env = CollectEnv(file.path);
  AddMeasurementEnv(file.path, opts.counters, opts.sample_ms, &env);
  env["command_line"] = opts.command_line;
  env["experiment"] = opts.experiment;
  env["file"] = FileEnv(file);
  if (opts.procs > 1) env["procs"] = opts.procs;
  if (opts.memory_limit > 0) env["memory_limit_bytes"] = opts.memory_limit;
  s = WriteJsonFile(opts.out_dir + "/env.json", env);
  JsonlWriter runs_out;
  if (s.ok()) s = runs_out.Open(opts.out_dir + "/runs.jsonl");
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}\n", s.message());
    return 2;
  }
  if (!rs.root) {
    fmt::print(stderr,
               "loadbench run: not root: cold runs use posix_fadvise(DONTNEED) instead of "
               "drop_caches (recorded in env.json); each cold start is still checked\n");
  }

  rs.experiment = opts.experiment;
  rs.out_dir = opts.out_dir;
  rs.counters = opts.counters;
  rs.sample_ms = opts.sample_ms;
  rs.timeout_s = opts.timeout_s;
  rs.out = &runs_out;
  rs.total =
      opts.reps * opts.procs * static_cast<int>(opts.caches.size() * opts.strategies.size());
  fmt::print(stderr, "loadbench run: {} ({}, {} tensors), {} runs -> {}\n", file.path,
             FormatBytes(file.table.file_size), file.table.tensors.size(), rs.total,
             opts.out_dir);

  // What strategies leave behind (a shared segment) goes when the runner does, however it ends.
  struct CleanupGuard {
    const RunOptions& opts;
    std::string file;
    ~CleanupGuard() { CleanupStrategies(opts.strategies, file, "loadbench run"); }
  } cleanup_guard{opts, file.path};

  bool interrupted = false;
  const size_t n_strat = opts.strategies.size();
  for (int rep = 0; rep < opts.reps && !interrupted; ++rep) {
    for (const std::string& cache : opts.caches) {
      for (size_t k = 0; k < n_strat && !interrupted; ++k) {
        // Rotate the order every repetition so that no strategy always runs first after a
        // state change, and drift on a shared machine hits all of them alike.
        RunPoint p;
        p.spec = opts.strategies[(k + static_cast<size_t>(rep)) % n_strat];
        p.cache = cache;
        p.rep = rep;
        p.procs = opts.procs;
        p.memory_limit = opts.memory_limit;
        s = MeasureRun(rs, file, p, &interrupted);
        if (!s.ok()) {
          fmt::print(stderr, "loadbench run: {}\n", s.message());
          return 1;
        }
      }
      if (interrupted) break;
    }
  }

  fmt::print("\n{}", SummaryTable(rs.records));
  fmt::print("results: {}/runs.jsonl ({} runs), {}/env.json\n", opts.out_dir, rs.records.size(),
             opts.out_dir);
  if (interrupted || Interrupted()) {
    fmt::print(stderr,
               "loadbench run: interrupted after {} of {} runs; finished runs are kept in {}\n",
               rs.records.size(), rs.total, runs_out.path());
    return 130;
  }
  if (const int bad = CountBad(rs.records); bad > 0) {
    fmt::print(stderr, "loadbench run: {} of {} runs failed or were invalid (see runs.jsonl)\n",
               bad, rs.records.size());
    return 1;
  }
  return 0;
}

}  // namespace loadbench
