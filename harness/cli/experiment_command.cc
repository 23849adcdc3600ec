// `loadbench experiment FILE|NAME`: an experiment file's plan, run by the executor into a fresh
// results folder (or, with --resume, one that holds some of its runs), then its report; or,
// with --dry-run, the plan printed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/commands.h"
#include "harness/cli/reps_options.h"
#include "harness/experiment/file.h"
#include "harness/experiment/point.h"
#include "harness/launch/job.h"
#include "harness/machine/counters.h"
#include "harness/process/home.h"
#include "harness/record/record.h"
#include "harness/record/results.h"
#include "harness/run/dry_run.h"
#include "harness/run/executor.h"

namespace loadbench::cli {
namespace {

namespace fs = std::filesystem;

// FILE as given when it is a file or a path (it holds a /); else a NAME of the home's
// experiments/ (quick, quick.toml); kBadInput naming those there when it is neither.
Status ExperimentPath(const std::string& given, std::string* path) {
  std::error_code ec;
  *path = given;
  std::string home;
  if (fs::is_regular_file(given, ec) || given.find('/') != std::string::npos ||
      !LoadbenchHome(&home).ok()) {
    return Status::Ok();  // LoadExperiment says what is wrong with it
  }
  const std::string dir = home + "/experiments";
  const std::string named = dir + "/" + given + (given.ends_with(".toml") ? "" : ".toml");
  if (fs::is_regular_file(named, ec)) {
    *path = named;
    return Status::Ok();
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return Status::BadInput(fmt::format("{}: no such file, nor an experiment of {} ({})", given, dir,
                                      fmt::join(names, ", ")));
}

// Whether `dir` holds a session of `e` (env.json) with fewer of its planned runs recorded than
// the plan has; adaptive rounds that stopped (adaptive.json) are complete. *recorded: the
// planned runs it holds.
bool Incomplete(const Experiment& e, const std::string& dir, size_t* recorded) {
  std::error_code ec;
  *recorded = 0;
  if (!fs::exists(dir + "/env.json", ec)) return false;
  std::set<std::string> keys;
  for (const auto& r : ReadRecords(dir + "/runs.jsonl")) {
    if (r.value("experiment", "") == e.name) keys.insert(RunKey(r));
  }
  for (const ExperimentRun& r : e.runs) {
    *recorded += keys.count(RunKey(RecordedPath(e.files[r.file].path), PointOf(e, r)));
  }
  if (e.auto_reps && fs::exists(dir + "/adaptive.json", ec)) return false;
  return *recorded < e.runs.size();
}

// --resume without a folder: the newest results/NAME-<UTC time> that is incomplete, said.
Status NewestIncomplete(const Experiment& e, std::string* dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("results", ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && name.starts_with(e.name + "-")) found.push_back(name);
  }
  std::sort(found.rbegin(), found.rend());  // a UTC stamp sorts by time
  for (const std::string& name : found) {
    size_t recorded = 0;
    if (!Incomplete(e, "results/" + name, &recorded)) continue;
    *dir = "results/" + name;
    fmt::print(stderr,
               "loadbench experiment: resuming {}, the newest incomplete results/{}-* "
               "({} of {} runs recorded)\n",
               *dir, e.name, recorded, e.runs.size());
    return Status::Ok();
  }
  return Status::BadInput(fmt::format(
      "--resume: no results/{}-* folder holds an incomplete run of {}; give --resume DIR", e.name,
      e.name));
}

// The results folder: --resume's, --out, or a fresh results/NAME-<UTC time>. Under an MPI
// launcher, or with a [cluster] (whose ranks run this command line again), the default is
// results/NAME, one name every rank agrees on. Without --resume a folder that holds runs is
// refused, naming --resume.
Status ResultsFolder(const ExperimentFlags& f, const Experiment& e, std::string* out) {
  if (f.resume && !f.resume_dir.empty() && !f.out_dir.empty() && f.resume_dir != f.out_dir) {
    return Status::BadInput(fmt::format("--out {} and --resume {} name two folders; give one",
                                        f.out_dir, f.resume_dir));
  }
  std::string given = f.resume_dir.empty() ? f.out_dir : f.resume_dir;
  const bool ranks = LaunchedByMpi() || e.cluster.on();
  if (given.empty() && ranks) given = "results/" + e.name;
  if (f.resume) {
    if (given.empty()) return NewestIncomplete(e, out);
    std::error_code ec;  // under a launcher, rank 0's host alone may have it
    if (!ranks && !fs::is_directory(given, ec)) {
      return Status::BadInput(fmt::format("--resume {}: no such results folder", given));
    }
    *out = given;
    return Status::Ok();
  }
  *out = given.empty() ? fmt::format("results/{}-{}", e.name, NowStamp("%Y%m%d-%H%M%S")) : given;
  // The executor refuses it too, once it holds the folder: first, here, only what no one writes
  // into now (another writer is named by the executor), and not under a launcher (rank 0 alone
  // sees the folder).
  struct stat st {};
  if (!LaunchedByMpi() && ::access((*out + "/.loadbench.lock").c_str(), F_OK) != 0 &&
      ::stat((*out + "/runs.jsonl").c_str(), &st) == 0 && st.st_size > 0) {
    return Status::BadInput(fmt::format(
        "{} already holds runs (runs.jsonl): to go on with them give --resume {}, else choose "
        "another --out",
        *out, *out));
  }
  return Status::Ok();
}

// The file read, with the flags that change it applied.
Status Load(const ExperimentFlags& f, Experiment* e) {
  RepsOverrides reps;
  LB_RETURN_IF_ERROR(ParseRepsFlags(f.reps, &reps));
  LB_RETURN_IF_ERROR(CheckExports(f.report));
  std::string path;
  LB_RETURN_IF_ERROR(ExperimentPath(f.path, &path));
  LB_RETURN_IF_ERROR(LoadExperiment(path, f.data_dir, e));
  if (f.seed) {
    e->seed = *f.seed;
    PlanRuns(e);
  }
  LB_RETURN_IF_ERROR(ApplyRepsOverrides(reps, e));
  if (!f.tune.empty()) {
    e->system.tune = f.tune != "off";
    e->system.tune_auto = f.tune == "auto";
  }
  if (f.profile.hz && !f.profile.on && !e->profile) {
    return Status::BadInput("--profile-hz: only with --profile or the file's profile = true");
  }
  e->profile = e->profile || f.profile.on;
  if (f.profile.hz) e->profile_hz = *f.profile.hz;
  return Status::Ok();
}

}  // namespace

int ExperimentCommand(const ExperimentFlags& f, const std::string& command_line) {
  Experiment e;
  std::string out_dir;
  Status s = Load(f, &e);
  if (s.ok()) s = ResultsFolder(f, e, &out_dir);
  if (!s.ok()) return ReportError("experiment", s);
  if (f.dry_run) return PrintPlan(e, f.data_dir, out_dir);
  ExecuteOptions o;
  o.who = "loadbench experiment";
  o.out_dir = out_dir;
  o.resume = f.resume;
  o.quiet = f.quiet;
  o.verbose = f.verbose;
  o.data_dir = f.data_dir;
  o.cleanup = f.cleanup;
  o.wait = !f.no_wait;
  o.settle_wait_s = f.settle_wait_s;
  o.command_line = command_line;
  (void)ParseCounterList("default", &o.counters);  // the same set as `run`'s default
  return ReportAfterRuns(o.who, Execute(e, o), out_dir, f.report);
}

}  // namespace loadbench::cli
