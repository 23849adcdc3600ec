#include "harness/run/runner.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "harness/system/counters.h"
#include "harness/system/env.h"
#include "harness/system/interrupt.h"
#include "harness/run/results.h"
#include "harness/system/stability.h"
#include "loaders/base/units.h"

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
  env["rounds"] = {{"order", RoundOrderName(opts.order)}, {"seed", opts.seed},
                   {"ceiling", opts.ceiling}, {"baseline", opts.baseline},
                   {"reps", opts.auto_reps ? nlohmann::ordered_json("auto")
                                           : nlohmann::ordered_json(opts.reps)},
                   {"auto", opts.auto_reps ? opts.autoreps.ToJson() : nullptr}};
  StabilityOptions check;
  check.window_s = 0.5;  // every run and experiment pays it
  check.file_bytes = file.table.file_size;
  env["stability"] = CheckStability(check);
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
  const int ceiling_runs = opts.ceiling && std::count(opts.caches.begin(), opts.caches.end(),
                                                      std::string("cold")) > 0;
  const int rounds = opts.auto_reps ? opts.autoreps.max_rounds : opts.reps;
  rs.total = rounds * (opts.procs * static_cast<int>(opts.caches.size() * opts.strategies.size()) +
                       ceiling_runs);
  fmt::print(stderr, "loadbench run: {} ({}, {} tensors), {} runs{} -> {}\n", file.path,
             FormatBytes(file.table.file_size), file.table.tensors.size(), rs.total,
             opts.auto_reps ? " at most" : "", opts.out_dir);
  for (const nlohmann::ordered_json& w : env["stability"]["warnings"]) {
    fmt::print(stderr, "loadbench run: WARNING before the runs: {}\n", w.get<std::string>());
  }

  // What strategies leave behind (a shared segment) goes when the runner does, however it ends.
  struct CleanupGuard {
    const RunOptions& opts;
    std::string file;
    ~CleanupGuard() { CleanupStrategies(opts.strategies, file, "loadbench run"); }
  } cleanup_guard{opts, file.path};

  // One round: every strategy once per cache state (and the ceiling in a cold one).
  auto run_round = [&](int rep, bool* interrupted) -> Status {
    for (const std::string& cache : opts.caches) {
      std::vector<StrategySpec> members = opts.strategies;
      if (opts.ceiling && cache == "cold") members.push_back(CeilingRunSpec());
      const std::vector<size_t> order = MembersInOrder(members.size(), rep, opts.order, opts.seed);
      for (size_t k = 0; k < members.size(); ++k) {
        RunPoint p;
        p.spec = members[order[k]];
        p.cache = cache;
        p.rep = rep;
        p.position = static_cast<int>(k);
        p.procs = opts.procs;
        p.memory_limit = opts.memory_limit;
        LB_RETURN_IF_ERROR(MeasureRun(rs, file, p, interrupted));
        if (*interrupted) return Status::Ok();
      }
    }
    return Status::Ok();
  };

  bool interrupted = false;
  std::string stopped;
  RoundsVerdict verdict;
  if (opts.auto_reps) {
    const auto start = std::chrono::steady_clock::now();
    RoundDriver d;
    d.run_round = run_round;
    d.records = [&] { return rs.records; };
    d.now_s = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    d.after_round = [&](const RoundsVerdict& v, const std::string& why) {
      const Status w = WriteJsonFile(opts.out_dir + "/adaptive.json",
                                     AdaptiveJson(opts.autoreps, v, d.now_s(), why));
      if (!w.ok()) fmt::print(stderr, "loadbench run: {}\n", w.message());
    };
    s = RunAutoRounds(opts.autoreps, opts.baseline, d, &stopped, &verdict);
    interrupted = stopped == "interrupted";
  } else {
    for (int rep = 0; rep < opts.reps && s.ok() && !interrupted; ++rep) {
      s = run_round(rep, &interrupted);
    }
  }
  if (!s.ok()) {
    fmt::print(stderr, "loadbench run: {}\n", s.message());
    return 1;
  }

  fmt::print("\n{}{}", SummaryTable(rs.records), NoiseSummary(rs.records, opts.baseline));
  if (opts.auto_reps) fmt::print("{}", AutoRepsLine(opts.autoreps, verdict, stopped));
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
