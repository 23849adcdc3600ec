#include "harness/run/experiment_run.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "harness/system/cgroup.h"
#include "harness/system/counters.h"
#include "harness/system/env.h"
#include "harness/system/interrupt.h"
#include "harness/probe/probe.h"
#include "harness/run/results.h"
#include "harness/run/runner.h"
#include "harness/run/rounds.h"
#include "harness/run/session.h"
#include "harness/system/stability.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr const char* kWho = "loadbench experiment";

int Fail(const std::string& message, int code = 2) {
  fmt::print(stderr, "{}: {}\n", kWho, message);
  return code;
}

std::string Duration(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::fmod(s, 3600) / 60);
}

uint64_t FreeBytes(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return 0;
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

// The nearest existing folder at or above `path`: where a file to be written will go.
std::string ExistingDirOf(const std::string& path) {
  fs::path p = fs::absolute(path);
  std::error_code ec;
  while (!p.empty() && !fs::is_directory(p, ec)) p = p.parent_path();
  return p.empty() ? "/" : p.string();
}

// A generated file the data folder already holds at its planned size (gen itself checks that
// the spec matches before it reuses one).
bool Present(const ExperimentFile& f) {
  struct stat st {};
  return ::stat(f.path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == f.file_bytes;
}

// The runs runs.jsonl already holds, by RunKey. A last line cut short by a crash is removed
// (appends are whole lines, so only a crash inside the write can leave one); any other line
// that is not a run record, or a run of another experiment, is refused.
Status ReadRecorded(const std::string& path, const std::string& experiment,
                    std::set<std::string>* keys, size_t* records) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Ok();  // nothing recorded yet
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  size_t pos = 0, line_no = 0, good_end = 0;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      fmt::print(stderr, "{}: {}: line {} is cut short (an interrupted write); removing it\n",
                 kWho, path, line_no);
      if (::truncate(path.c_str(), static_cast<off_t>(good_end)) != 0) {
        return Status::FromErrno(fmt::format("{}: truncate", path), errno);
      }
      break;
    }
    const Json r = Json::parse(text.substr(pos, nl - pos), nullptr, false);
    if (!r.is_object() || !r.contains("strategy_spec") || !r.contains("rep")) {
      return Status::BadInput(fmt::format("{}:{}: not a run record", path, line_no));
    }
    if (r.value("experiment", "") != experiment) {
      return Status::BadInput(fmt::format(
          "{} holds runs of experiment '{}', not '{}'; choose another --out", path,
          r.value("experiment", ""), experiment));
    }
    keys->insert(RunKey(r));
    ++*records;
    pos = good_end = nl + 1;
  }
  return Status::Ok();
}

// Every line of runs.jsonl that is a JSON object, for reading only (ReadRecorded checks them).
std::vector<Json> RecordsIn(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    Json r = Json::parse(line, nullptr, false);
    if (r.is_object()) out.push_back(std::move(r));
  }
  return out;
}

// The progress line: runs done of the total, the current run, and the time left; redrawn in
// place on a terminal, absent otherwise.
class Progress {
 public:
  explicit Progress(bool on) : on_(on && ::isatty(2) == 1) {}
  bool on() const { return on_; }
  void Show(const std::string& text) {
    if (on_) fmt::print(stderr, "\r\033[K{}", text);
  }
  void Clear() {
    if (on_) fmt::print(stderr, "\r\033[K");
  }

 private:
  bool on_;
};

// The time left. A run whose combination (all but the repetition) has been measured in this
// session is expected to take what it took (interleaved order measures every combination in the
// first repetition); another, its estimate scaled by how the measured runs compared with
// theirs; without estimates, the mean time of a run so far.
class Eta {
 public:
  struct Item {
    std::string combination;
    double estimate = 0;
  };
  explicit Eta(std::vector<Item> items) : items_(std::move(items)) {}

  void Done(size_t i, double actual) {
    auto& [sum, n] = measured_[items_[i].combination];
    sum += actual;
    ++n;
    est_done_ += items_[i].estimate;
    actual_done_ += actual;
    ++runs_;
  }

  // The time left before item `next` starts.
  std::string Left(size_t next) const {
    const double ratio = est_done_ > 0 ? actual_done_ / est_done_ : 1;
    double left = 0;
    bool any_estimate = runs_ > 0;
    for (size_t i = next; i < items_.size(); ++i) {
      const auto m = measured_.find(items_[i].combination);
      if (m != measured_.end()) {
        left += m->second.first / m->second.second;
      } else if (items_[i].estimate > 0) {
        left += items_[i].estimate * ratio;
        any_estimate = true;
      } else if (runs_ > 0) {
        left += actual_done_ / runs_;
      }
    }
    if (!any_estimate) return "unknown";
    return runs_ == 0 ? "~" + Duration(left) + " (estimate)" : Duration(left);
  }

 private:
  std::vector<Item> items_;
  std::map<std::string, std::pair<double, int>> measured_;
  double est_done_ = 0, actual_done_ = 0;
  int runs_ = 0;
};

// env.json's `rounds`: how the runs were ordered and compared.
Json RoundsEnv(const Experiment& e) {
  return {{"order", RoundOrderName(e.order)}, {"seed", e.seed}, {"ceiling", e.ceiling},
          {"baseline", e.baseline}, {"reps", e.auto_reps ? Json("auto") : Json(e.reps)},
          {"auto", e.auto_reps ? e.autoreps.ToJson() : Json(nullptr)}};
}

RunPoint PointOf(const Experiment& e, const ExperimentRun& r) {
  RunPoint p;
  if (r.strategy == e.strategies.size()) {
    p.spec = CeilingRunSpec();
  } else {
    const ExperimentStrategy& st = e.strategies[r.strategy];
    p.spec = st.spec;
    p.unsupported = st.unsupported;
  }
  p.position = r.position;
  p.cache = r.cache;
  p.rep = r.rep;
  p.procs = r.procs;
  p.memory_limit = r.memory_limit;
  return p;
}

// The file's path as runs.jsonl records it (absolute, links resolved).
std::string RecordedPath(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? path : p.string();
}

std::string LimitText(uint64_t limit) { return limit ? FormatBytes(limit) : "none"; }

std::string RepsText(const Experiment& e) {
  if (!e.auto_reps) return std::to_string(e.reps);
  const AutoReps& a = e.autoreps;
  return fmt::format("auto (until every paired ratio with the baseline is known within ±{:.0f}%, "
                     "{} to {} rounds{})",
                     a.target * 100, a.min_rounds, a.max_rounds,
                     a.budget_s > 0 ? ", budget " + Duration(a.budget_s) : "");
}

// --dry-run: what would run, what it needs, and roughly how long it takes.
int PrintPlan(const Experiment& e, const ExperimentOptions& opts, const std::string& out_dir,
              const std::set<std::string>& recorded) {
  fmt::print("experiment: {} ({})\n", e.name, e.path);
  if (!e.question.empty()) fmt::print("question: {}\n", e.question);
  std::string why;
  std::optional<Ceilings> ceilings;
  std::optional<Json> probe = CachedProbe(opts.data_dir, &why);
  if (probe) ceilings = CeilingsOf(*probe);
  if (probe && !ceilings) why = "the cached probe lacks the device figures";

  uint64_t to_write = 0;
  double gen_s = 0;
  fmt::print("files ({}):\n", e.files.size());
  std::vector<uint64_t> bytes(e.files.size(), 0);
  for (size_t i = 0; i < e.files.size(); ++i) {
    const ExperimentFile& f = e.files[i];
    if (f.generate) {
      const bool present = Present(f);
      bytes[i] = f.file_bytes;
      if (!present) {
        to_write += f.file_bytes;
        if (ceilings) gen_s += f.file_bytes / (ceilings->write_gbps * 1e9);
      }
      fmt::print("  {}  {}, {} {} {} seed {}{}: {}\n", f.path, FormatBytes(f.file_bytes),
                 f.gen.preset, f.gen.format, f.gen.dtype, f.gen.seed,
                 f.gen.align ? fmt::format(" align {}", f.gen.align) : "",
                 present ? "present, reused" : "to generate");
    } else {
      struct stat st {};
      const bool exists = ::stat(f.path.c_str(), &st) == 0;
      bytes[i] = exists ? static_cast<uint64_t>(st.st_size) : 0;
      fmt::print("  {}  {}\n", f.path,
                 exists ? FormatBytes(bytes[i]) + ", given" : "MISSING: the run would stop here");
    }
  }
  fmt::print("strategies ({} points):\n", e.strategies.size());
  for (const auto& s : e.strategies) {
    fmt::print("  {}{}\n", s.spec.text, s.unsupported.empty() ? "" : "  (unsupported: " +
                                                                          s.unsupported + ")");
  }
  std::string limits;
  for (uint64_t l : e.memory_limits) limits += (limits.empty() ? "" : ", ") + LimitText(l);
  std::string procs;
  for (int p : e.procs) procs += (procs.empty() ? "" : ", ") + std::to_string(p);
  std::string caches;
  for (const auto& c : e.caches) caches += (caches.empty() ? "" : ", ") + c;
  fmt::print("cache: {}; reps: {}; procs: {}; memory limit: {}; order: {}; timeout: {}\n",
             caches, RepsText(e), procs, limits,
             e.order == RoundOrder::kShuffled ? fmt::format("shuffled (seed {})", e.seed)
                                              : RoundOrderName(e.order),
             e.timeout_s > 0 ? Duration(e.timeout_s) : "none");
  fmt::print("baseline: {} (paired ratios in every round are against it); ceiling: {}\n",
             e.baseline, e.ceiling ? "a device read in every round of a cold condition" : "no");
  const bool any_limit = std::any_of(e.memory_limits.begin(), e.memory_limits.end(),
                                     [](uint64_t l) { return l > 0; });
  if (const std::string cg = MemoryCgroupUnsupportedReason(); any_limit && !cg.empty()) {
    fmt::print("memory limits: unsupported here ({}); those runs will say so\n", cg);
  }

  size_t todo = 0, records = 0;
  double run_s = 0;
  for (const ExperimentRun& r : e.runs) {
    const RunPoint p = PointOf(e, r);
    if (recorded.count(RunKey(RecordedPath(e.files[r.file].path), p))) continue;
    ++todo;
    records += p.spec.name == kCeiling ? 1 : static_cast<size_t>(r.procs);
    if (ceilings && p.unsupported.empty()) {
      double t = EstimateRunSeconds(*ceilings, bytes[r.file], p.spec, p.cache, p.procs);
      if (e.timeout_s > 0) t = std::min(t, e.timeout_s);
      run_s += t;
    }
  }
  fmt::print("runs: {} planned{}", e.runs.size(), e.auto_reps ? " (at most)" : "");
  if (todo != e.runs.size())
    fmt::print(", {} already recorded in {}", e.runs.size() - todo, out_dir);
  fmt::print(", {} to run ({} records)\n", todo, records);
  const std::string data_dir = ExistingDirOf(opts.data_dir);
  const uint64_t free_bytes = FreeBytes(data_dir);
  fmt::print("disk: {} to generate in {}, {} free there{}\n", FormatBytes(to_write),
             opts.data_dir, FormatBytes(free_bytes),
             to_write > free_bytes ? "  NOT ENOUGH: generation would stop" : "");
  if (ceilings) {
    fmt::print("time: about {} (generation {}, runs {}), a rough estimate from the probe of "
               "{}\n", Duration(gen_s + run_s), Duration(gen_s), Duration(run_s),
               probe->value("time_utc", "?"));
  } else {
    fmt::print("time: no estimate ({}); run `loadbench probe` first\n", why);
  }
  fmt::print("results: {}\n", out_dir);
  return 0;
}

}  // namespace

std::optional<Ceilings> CeilingsOf(const Json& probe) {
  const Json& c = probe.value("ceilings", Json::object());
  auto get = [&](const char* key, const char* field) {
    const Json& x = c.value(key, Json::object());
    const auto v = x.find(field);
    return v != x.end() && v->is_number() ? v->get<double>() : 0.0;
  };
  Ceilings out;
  out.cold_gbps = get("cold_buffered_read", "median_gb_per_s");
  out.cold_direct_gbps = get("cold_direct_read", "median_gb_per_s");
  out.warm_gbps = get("warm_read", "median_gb_per_s");
  out.memcpy_gbps = get("memcpy", "median_gb_per_s");
  out.write_gbps = get("sequential_write", "gb_per_s");
  out.anon_fault_us = get("anon_4k_fault", "us_per_fault");
  out.file_page_us = get("file_minor_fault", "us_per_page");
  if (out.cold_gbps <= 0 || out.warm_gbps <= 0 || out.memcpy_gbps <= 0 || out.write_gbps <= 0) {
    return std::nullopt;
  }
  if (out.cold_direct_gbps <= 0) out.cold_direct_gbps = out.cold_gbps;
  return out;
}

double EstimateRunSeconds(const Ceilings& c, uint64_t file_bytes, const StrategySpec& spec,
                          const std::string& cache, int procs) {
  const StrategyInfo* info = FindStrategy(spec.name);
  const uint32_t flags = info ? info->flags : 0;
  const double b = static_cast<double>(file_bytes), pages = b / 4096;
  const auto direct = spec.options.find("direct");
  const bool bypass =
      spec.name == "odirect" || (direct != spec.options.end() && direct->second == "on");
  // Worker start and the cache preparation: a drop, or a read of the (mostly cached) file.
  double t = 0.2 + (cache == "warm" ? b / (c.warm_gbps * 1e9) : 0);
  double load = cache == "cold" ? b / ((bypass ? c.cold_direct_gbps : c.cold_gbps) * 1e9)
                                : b / (c.warm_gbps * 1e9);
  if (flags & kAllocates) load += pages * c.anon_fault_us * 1e-6;
  if (flags & kMapsFile) load += pages * c.file_page_us * 1e-6;
  load += b / (c.memcpy_gbps * 1e9);  // the checksum consumer reads every byte once
  return t + load * procs;
}

int RunExperiment(const ExperimentOptions& opts) {
  Experiment e;
  if (Status s = LoadExperiment(opts.path, opts.data_dir, &e); !s.ok()) return Fail(s.message());
  if (opts.seed) {
    e.seed = *opts.seed;
    PlanRuns(&e);
  }
  if (opts.reps > 0 || opts.auto_reps || opts.auto_target >= 0 || opts.auto_budget_s >= 0 ||
      opts.auto_min_rounds >= 0 || opts.auto_max_rounds >= 0) {
    if (opts.reps > 0) {
      e.auto_reps = false;
      e.reps = opts.reps;
    }
    if (opts.auto_reps) e.auto_reps = true;
    if (opts.auto_target >= 0) e.autoreps.target = opts.auto_target;
    if (opts.auto_budget_s >= 0) e.autoreps.budget_s = opts.auto_budget_s;
    if (opts.auto_min_rounds >= 0) e.autoreps.min_rounds = opts.auto_min_rounds;
    if (opts.auto_max_rounds >= 0) e.autoreps.max_rounds = opts.auto_max_rounds;
    if (!e.auto_reps && (opts.auto_target >= 0 || opts.auto_budget_s >= 0 ||
                         opts.auto_min_rounds >= 0 || opts.auto_max_rounds >= 0)) {
      return Fail("--auto-* options need --reps auto (or reps = \"auto\" in the file)");
    }
    if (e.auto_reps) {
      if (Status s = CheckAutoReps(e.autoreps); !s.ok()) return Fail(s.message());
      if (e.order == RoundOrder::kGrouped) {
        return Fail(fmt::format("{}: --reps auto compares within rounds; the experiment's "
                                "order is grouped", e.path));
      }
      e.reps = e.autoreps.max_rounds;
    }
    PlanRuns(&e);
  }
  const std::string out_dir = opts.out_dir.empty() ? "results/" + e.name : opts.out_dir;
  const std::string runs_path = out_dir + "/runs.jsonl";
  std::set<std::string> recorded;
  size_t recorded_records = 0;
  if (opts.dry_run) {
    // Read only: a dry run changes nothing, not even a cut-short line.
    for (const Json& r : RecordsIn(runs_path)) {
      if (r.value("experiment", "") == e.name) recorded.insert(RunKey(r));
    }
    return PrintPlan(e, opts, out_dir, recorded);
  }
  if (Status s = ReadRecorded(runs_path, e.name, &recorded, &recorded_records); !s.ok()) {
    return Fail(s.message());
  }
  // Given files are checked before anything is generated or run.
  for (const ExperimentFile& f : e.files) {
    if (f.generate) continue;
    TensorTable t;
    if (Status s = ReadTensorTableFromPath(f.path, &t); !s.ok()) return Fail(s.message());
  }

  RunSession rs;
  StartSession(&rs);
  Progress progress(!opts.quiet);
  std::vector<std::string> generated;
  for (ExperimentFile& f : e.files) {
    if (!f.generate) continue;
    if (Status s = MakeDirs(opts.data_dir); !s.ok()) return Fail(s.message());
    GenOptions gen = f.gen;
    gen.progress = progress.on();
    GenResult r;
    if (Status s = Generate(gen, &r); !s.ok()) {
      if (Interrupted()) {
        return Fail(fmt::format("interrupted while generating {}; nothing was run", f.path), 130);
      }
      return Fail(s.message());
    }
    if (!r.reused) {
      generated.push_back(f.path);
      if (!opts.quiet) {
        fmt::print(stderr, "{}: generated {} ({}) in {:.1f} s\n", kWho, f.path,
                   FormatBytes(r.file_bytes), r.seconds);
      }
    }
  }
  std::vector<PreparedFile> files(e.files.size());
  for (size_t i = 0; i < e.files.size(); ++i) {
    if (Status s = PrepareFile(e.files[i].path, kWho, &files[i]); !s.ok()) {
      return Fail(s.message());
    }
  }

  if (Status s = MakeDirs(out_dir); !s.ok()) return Fail(s.message());
  // env.json: written by the first session; a resume adds itself to "sessions".
  StabilityOptions check;
  check.window_s = 0.5;  // every run and experiment pays it
  check.file_bytes = files[0].table.file_size;
  const Json stability = CheckStability(check);
  Json session{{"started_at", NowStamp("%Y-%m-%dT%H:%M:%SZ")},
               {"command_line", opts.command_line},
               {"runs_recorded_before", recorded_records},
               {"stability", stability}};
  (void)ParseCounterList("default", &rs.counters);  // the same set as `run`'s default
  Json env;
  if (std::ifstream in(out_dir + "/env.json"); in && !recorded.empty()) {
    env = Json::parse(in, nullptr, false);
  }
  if (!env.is_object() || !env.contains("sessions")) {
    env = CollectEnv(files[0].path);
    AddMeasurementEnv(files[0].path, rs.counters, rs.sample_ms, &env);
    env["command_line"] = opts.command_line;
    env["experiment"] = e.name;
    env["experiment_file"] = {{"path", e.path}, {"question", e.question}};
    env["rounds"] = RoundsEnv(e);
    env["stability"] = stability;
    env["files"] = Json::array();
    for (const PreparedFile& f : files) env["files"].push_back(FileEnv(f));
    if (files.size() == 1) env["file"] = FileEnv(files[0]);
    env["sessions"] = Json::array();
  }
  // A resumed experiment may have changed its reps (--reps): the latest settings count.
  env["rounds"] = RoundsEnv(e);
  env["sessions"].push_back(session);
  for (const Json& w : stability["warnings"]) {
    fmt::print(stderr, "{}: WARNING before the runs: {}\n", kWho, w.get<std::string>());
  }
  if (Status s = WriteJsonFile(out_dir + "/env.json", env); !s.ok()) return Fail(s.message());
  // The experiment as it was run, beside its results.
  std::error_code ec;
  fs::copy_file(e.path, out_dir + "/experiment.toml", fs::copy_options::overwrite_existing, ec);
  JsonlWriter out;
  if (Status s = out.Open(runs_path); !s.ok()) return Fail(s.message());

  rs.experiment = e.name;
  rs.out_dir = out_dir;
  rs.timeout_s = e.timeout_s;
  rs.out = &out;
  rs.log = !opts.quiet;
  std::optional<Ceilings> ceilings;
  std::string why;
  if (auto probe = CachedProbe(files[0].path, &why)) ceilings = CeilingsOf(*probe);
  // The plan's runs not yet recorded, with their estimates for the time left.
  std::vector<const ExperimentRun*> todo;
  std::vector<Eta::Item> eta_items;
  int total_records = 0, done_records = 0;
  for (const ExperimentRun& r : e.runs) {
    const RunPoint p = PointOf(e, r);
    const int records = p.spec.name == kCeiling ? 1 : r.procs;  // a ceiling is one read
    total_records += records;
    if (recorded.count(RunKey(files[r.file].path, p))) {
      done_records += records;
      continue;
    }
    double est = 0;
    if (ceilings && p.unsupported.empty()) {
      est = EstimateRunSeconds(*ceilings, files[r.file].table.file_size, p.spec, p.cache,
                               p.procs);
      if (e.timeout_s > 0) est = std::min(est, e.timeout_s);
    }
    todo.push_back(&r);
    RunPoint combination = p;
    combination.rep = -1;
    eta_items.push_back({RunKey(files[r.file].path, combination), est});
  }
  rs.total = total_records;
  rs.done = done_records;
  if (!opts.quiet) {
    fmt::print(stderr, "{}: {}: {} runs planned, {} already recorded, {} to run -> {}\n", kWho,
               e.name, e.runs.size(), e.runs.size() - todo.size(), todo.size(), out_dir);
    if (!rs.root) {
      fmt::print(stderr, "{}: not root: cold runs use posix_fadvise(DONTNEED) instead of "
                         "drop_caches (recorded in env.json); each cold start is still checked\n",
                 kWho);
    }
  }
  std::vector<StrategySpec> specs;
  for (const auto& s : e.strategies) specs.push_back(s.spec);
  // What strategies leave behind (a shared segment) goes when the command does, and before
  // --cleanup removes the files it belongs to.
  struct CleanupGuard {
    const std::vector<StrategySpec>& specs;
    const std::vector<PreparedFile>& files;
    bool done = false;
    void Now() {
      if (done) return;
      done = true;
      for (const auto& f : files) CleanupStrategies(specs, f.path, kWho);
    }
    ~CleanupGuard() { Now(); }
  } cleanup_guard{specs, files};

  bool interrupted = false;
  Eta eta(std::move(eta_items));
  size_t next = 0;  // into todo, which is in plan order: round by round
  // Runs the planned runs up to and including round `last_rep`.
  auto run_through = [&](int last_rep, bool* stop) -> Status {
    for (; next < todo.size() && todo[next]->rep <= last_rep; ++next) {
      const ExperimentRun* run = todo[next];
      const RunPoint p = PointOf(e, *run);
      const std::string left = e.auto_reps ? "ETA at most " + eta.Left(next) : "ETA " +
                                                                                 eta.Left(next);
      progress.Show(fmt::format("[{}/{}] {} {} rep {}{}{} ... {}", rs.done, rs.total, p.cache,
                                p.spec.text, p.rep,
                                p.procs > 1 ? fmt::format(" x{} procs", p.procs) : "",
                                p.memory_limit ? " limit " + FormatBytes(p.memory_limit) : "",
                                left));
      rs.clear_line = progress.on();
      const auto t0 = Clock::now();
      Status s = MeasureRun(rs, files[run->file], p, stop);
      progress.Clear();
      LB_RETURN_IF_ERROR(s);
      if (*stop) return Status::Ok();
      eta.Done(next, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return Status::Ok();
  };
  std::string stopped;
  RoundsVerdict verdict;
  if (e.auto_reps) {
    const auto start = Clock::now();
    RoundDriver d;
    d.run_round = [&](int round, bool* stop) { return run_through(round, stop); };
    d.records = [&] { return RecordsIn(runs_path); };
    d.now_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    d.after_round = [&](const RoundsVerdict& v, const std::string& why) {
      const Json j = AdaptiveJson(e.autoreps, v, d.now_s(), why);
      if (Status w = WriteJsonFile(out_dir + "/adaptive.json", j); !w.ok()) {
        fmt::print(stderr, "{}: {}\n", kWho, w.message());
      }
    };
    if (Status s = RunAutoRounds(e.autoreps, e.baseline, d, &stopped, &verdict); !s.ok()) {
      return Fail(s.message(), 1);
    }
    interrupted = stopped == "interrupted";
  } else if (Status s = run_through(e.reps, &interrupted); !s.ok()) {
    return Fail(s.message(), 1);
  }
  progress.Clear();

  // The summary covers every run of the experiment, earlier sessions' included.
  const std::vector<Json> all = RecordsIn(runs_path);
  if (!opts.quiet) fmt::print("\n{}{}", SummaryTable(all), NoiseSummary(all, e.baseline));
  if (e.auto_reps) fmt::print("{}", AutoRepsLine(e.autoreps, verdict, stopped));
  fmt::print("results: {} ({} runs), {}/env.json\n", runs_path, all.size(), out_dir);
  std::fflush(stdout);  // the summary before the messages below
  if (interrupted || Interrupted()) {
    fmt::print(stderr,
               "{}: interrupted: {} of {} runs recorded in {}; to resume, run the same "
               "command again:\n  loadbench experiment {} --out {}{}\n",
               kWho, rs.done, rs.total, runs_path, e.path, out_dir,
               opts.data_dir != "data" ? " --data " + opts.data_dir : "");
    return 130;
  }
  if (opts.cleanup) {
    cleanup_guard.Now();
    for (const std::string& path : generated) {
      if (::unlink(path.c_str()) == 0) {
        fmt::print(stderr, "{}: removed {}\n", kWho, path);
      } else {
        fmt::print(stderr, "{}: could not remove {}: {}\n", kWho, path, std::strerror(errno));
      }
    }
  }
  if (const int bad = CountBad(rs.records); bad > 0) {
    fmt::print(stderr, "{}: {} of {} runs of this session failed or were invalid (see {})\n",
               kWho, bad, rs.records.size(), runs_path);
    return 1;
  }
  return 0;
}

}  // namespace loadbench
