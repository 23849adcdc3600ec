#include "harness/run/executor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/experiment/estimate.h"
#include "harness/experiment/rounds.h"
#include "harness/launch/ranks.h"
#include "harness/leftovers/leftovers.h"
#include "harness/machine/env.h"
#include "harness/machine/settle.h"
#include "harness/machine/stability.h"
#include "harness/machine/tuning.h"
#include "harness/measure/ceiling.h"
#include "harness/measure/measure.h"
#include "harness/probe/probe.h"
#include "harness/process/interrupt.h"
#include "harness/process/locks.h"
#include "harness/profile/profile.h"
#include "harness/record/results.h"
#include "harness/run/cluster_run.h"
#include "harness/run/follow.h"
#include "harness/run/link_runs.h"
#include "harness/run/progress.h"
#include "harness/run/remote_files.h"
#include "harness/run/session.h"
#include "harness/run/storage_runs.h"
#include "harness/stats/noise.h"
#include "harness/stats/summary.h"
#include "loaders/base/units.h"
#include "loaders/format/model.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// env.json's `rounds`: how the runs were ordered and compared.
Json RoundsEnv(const Experiment& e) {
  return {{"order", RoundOrderName(e.order)},
          {"seed", e.seed},
          {"ceiling", e.ceiling},
          {"baseline", e.baseline},
          {"reps", e.auto_reps ? Json("auto") : Json(e.reps)},
          {"auto", e.auto_reps ? e.autoreps.ToJson() : Json(nullptr)}};
}

// env.json's "mpi": the job's ranks and the host of each.
Json MpiEnv(const Job& job) {
  Json hosts = Json::array();
  for (int k = 0; k < job.size(); ++k) hosts.push_back(job.host_of(k));
  return {{"ranks", job.size()}, {"hosts", job.hosts()}, {"rank_hosts", hosts}};
}

// The meters of an experiment's server, its s3fs mount and its link (measure/measure.h).
class ServedMeters final : public Meters {
 public:
  ServedMeters(const RemoteFiles& remote, const LinkRuns& link) : remote_(remote), link_(link) {}
  MeterReading Read() const override {
    MeterReading m;
    m.server_cpu_s = remote_.ServerCpuSeconds();
    if (remote_.mounted()) m.mount_cpu_s = remote_.MountCpuSeconds();
    if (link_.link() != nullptr) m.link_rx_bytes = link_.link()->ClientRxBytes();
    return m;
  }

 private:
  const RemoteFiles& remote_;
  const LinkRuns& link_;
};

// One command's execution of a plan, phase by phase (Run reads as the table of contents).
class Executor {
 public:
  Executor(const Experiment& e, const ExecuteOptions& o)
      : e_(e), o_(o), runs_path_(o.out_dir + "/runs.jsonl"), progress_(!o.quiet) {}
  // A results folder this command made and wrote nothing into goes with it.
  ~Executor() {
    folder_lock_.Release();
    if (created_out_dir_) ::rmdir(o_.out_dir.c_str());
  }

  int Run() {
    if (Status s = CheckGivenFiles(); !s.ok()) return Stop(s.message());
    if (Status s = TakeLocks(); !s.ok()) return Stop(s.message(), Interrupted() ? 130 : 2);
    if (Status s = CheckResultsFolder(); !s.ok()) return Stop(s.message());
    StartSession(&rs_);
    if (int code = GenerateFiles(); code != 0) return code;
    if (Status s = StartServer(); !s.ok()) return Stop(s.message());
    if (Status s = PrepareFiles(); !s.ok()) return Stop(s.message());
    if (int code = CheckRanks(); code != 0) return code;
    if (Status s = TuneMachine(); !s.ok()) return Stop(s.message(), s.exit_code());
    // The machine as it was, however the command ends (a kill: the next command, from the
    // journal).
    struct Untune {
      Executor& x;
      ~Untune() { x.RestoreMachine(); }
    } untune{*this};
    if (Status s = OpenResults(); !s.ok()) return NotWritten(s);
    PlanWhatIsLeft();
    Announce();
    // What strategies leave behind (a shared segment) goes when the command does, and before
    // --cleanup removes the files it belongs to; killed, the next command cleans it.
    for (const std::string& what : StrategyLeftovers()) TrackLeftover(Leftover::kStrategy, what);
    struct Guard {
      Executor& x;
      ~Guard() { x.CleanUpStrategies(); }
    } guard{*this};
    runs_start_ = Clock::now();
    const Status s = e_.auto_reps ? RunAdaptive() : RunThrough(e_.reps, &interrupted_);
    progress_.Clear();
    if (!s.ok()) return NotWritten(s);
    return Finish();
  }

  // Whether the other ranks of an MPI job are gone already (they stopped at the check).
  bool ranks_gone() const { return ranks_gone_; }

 private:
  // The message on stderr after the command's name; returns the exit code to end with.
  int Stop(const std::string& message, int code = 2) const {
    fmt::print(stderr, "{}: {}\n", o_.who, message);
    return code;
  }

  int NotWritten(const Status& s) const;
  int CheckRanks();
  std::string ResumeCommand() const;
  Status TakeLocks();
  Status CheckResultsFolder();
  Status CheckGivenFiles();
  int GenerateFiles();
  Status StartServer();
  Status PrepareFiles();
  Status TuneMachine();
  Json SettleBeforeRuns();
  void RestoreMachine();
  Json NewEnv(const Json& stability) const;
  Json CheckMachine() const;
  Status OpenResults();
  void SetUpProfiles();
  Json ProfileEnv() const;
  void PlanWhatIsLeft();
  void Announce();
  void Milestone();
  Status RunThrough(int last_rep, bool* stop);
  Status EnterStorage(const ExperimentRun& run);
  Status RunAdaptive();
  std::vector<std::string> StrategyLeftovers() const;
  void CleanUpStrategies();
  void RemoveGenerated() const;
  int Finish();

  const Experiment& e_;
  const ExecuteOptions& o_;
  const std::string runs_path_;
  bool created_out_dir_ = false;
  HeldLock folder_lock_, machine_lock_;
  std::set<std::string> recorded_;  // RunKey of every run already in runs.jsonl
  size_t recorded_records_ = 0;
  RunSession rs_;
  Progress progress_;
  std::vector<std::string> generated_;  // files this command wrote
  std::vector<PreparedFile> files_;
  LinkRuns link_;       // the experiment's [link]; removed after the server (declared before)
  RemoteFiles remote_;  // the experiment's [server], and the files as read through it
  ServedMeters meters_{remote_, link_};
  StorageRuns storages_;  // the [[storage]] axis; removed before the server a fuse one mounts
  DiskCeiling disk_ceiling_;
  Json stability_;
  JsonlWriter out_;
  std::vector<const ExperimentRun*> todo_;  // in plan order: round by round
  std::optional<Eta> eta_;
  Clock::time_point runs_start_;
  int tenths_shown_ = 0;            // the last tenth of the runs reached
  bool estimate_recorded_ = false;  // the time left, in env.json's session
  Json env_;                        // env.json as written
  size_t next_ = 0;                 // into todo_
  bool interrupted_ = false, cleaned_up_ = false, ranks_gone_ = false;
  std::string stopped_;  // why adaptive rounds stopped
  RoundsVerdict verdict_;
  std::optional<TuneRecord> tune_;  // the machine tuned by this command, until restored
};

// A failure to write the results: every message names the folder and the reason. Anything
// else that stops the command is bad input (exit 2).
int Executor::NotWritten(const Status& s) const {
  if (s.code() != Status::Code::kNotWritten) return Stop(s.message(), s.exit_code());
  return Stop(fmt::format("{}: the results could not be written: {}; {} of {} runs are recorded "
                          "there, each whole; once there is room, resume with:\n  {}",
                          o_.out_dir, s.message(), rs_.reporter.done, rs_.reporter.total,
                          ResumeCommand()),
              3);
}

// The command that goes on where this one stopped (under MPI, by the same launcher): this
// command's own words, the binary as it was typed, into the same folder with --resume (an
// experiment's --out and --resume give way to `--resume OUT`).
std::string Executor::ResumeCommand() const {
  // A cluster's command makes its cluster and runs mpirun itself.
  const std::string launcher = o_.job != nullptr && !o_.cluster.is_object()
                                   ? fmt::format("mpirun -np {} ", o_.job->size())
                                   : "";
  std::vector<std::string> words;
  std::istringstream in(o_.command_line);
  for (std::string w; in >> w;) words.push_back(w);
  const bool experiment = !e_.path.empty();
  if (words.size() < 2) {  // no command line: what `loadbench experiment` would be
    return fmt::format("{}loadbench experiment {} --resume {}{}", launcher, e_.path, o_.out_dir,
                       o_.data_dir != "data" ? " --data " + o_.data_dir : "");
  }
  std::string command = launcher + words[0];
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (experiment && (w == "--out" || w == "--resume")) {
      if (i + 1 < words.size() && words[i + 1] == o_.out_dir) ++i;  // its folder goes too
      continue;
    }
    if (experiment && (w.starts_with("--out=") || w.starts_with("--resume="))) continue;
    command += " " + w;
  }
  if (experiment) return command + " --resume " + o_.out_dir;
  if (command.find(" --out") == std::string::npos) command += " --out " + o_.out_dir;
  if (command.find(" --resume") == std::string::npos) command += " --resume";
  return command;
}

// The results folder for this command alone (refused when another writes there), then the
// machine for this measurement alone (waiting for the one that runs, unless told not to).
Status Executor::TakeLocks() {
  created_out_dir_ = ::access(o_.out_dir.c_str(), F_OK) != 0;
  if (Status s = MakeDirs(o_.out_dir); !s.ok()) {
    created_out_dir_ = false;
    return s;
  }
  const LockHolder me = ThisProcess(o_.command_line, o_.out_dir);
  LB_RETURN_IF_ERROR(LockResultsFolder(o_.out_dir, me, &folder_lock_));
  return BeginMeasurement(o_.who, me, o_.wait, &machine_lock_);
}

// A resumed folder must hold this experiment's runs only; a fresh one, none.
Status Executor::CheckResultsFolder() {
  if (o_.resume) return ReadRecorded(runs_path_, e_.name, o_.who, &recorded_, &recorded_records_);
  struct stat st {};
  if (::stat(runs_path_.c_str(), &st) == 0 && st.st_size > 0) {
    return Status::BadInput(
        fmt::format("{}: already holds results (runs.jsonl): to go on with them give --resume, "
                    "else choose another --out",
                    o_.out_dir));
  }
  return Status::Ok();
}

// Given files are checked before anything is generated or run, and so are the storages the
// model is to be put on, for every file's bytes.
Status Executor::CheckGivenFiles() {
  uint64_t model_bytes = 0;
  for (const ExperimentFile& f : e_.files) {
    if (f.generate) {
      model_bytes += f.file_bytes;
      continue;
    }
    TensorTable t;
    LB_RETURN_IF_ERROR(ReadModel(f.path, &t));
    model_bytes += t.file_size;
  }
  return StorageRuns::Check(e_, model_bytes);
}

// Generated files, reused when the data folder holds one of the same spec. Returns an exit
// code, 0 to go on.
int Executor::GenerateFiles() {
  for (const ExperimentFile& f : e_.files) {
    if (!f.generate) continue;
    if (Status s = MakeDirs(o_.data_dir); !s.ok()) return Stop(s.message());
    GenOptions gen = f.gen;
    gen.progress = progress_.on();
    GenResult r;
    if (Status s = Generate(gen, &r); !s.ok()) {
      if (Interrupted()) {
        return Stop(fmt::format("interrupted while generating {}; nothing was run", f.path), 130);
      }
      return Stop(s.message());
    }
    if (r.reused) continue;
    generated_.insert(generated_.end(), r.files.begin(), r.files.end());
    if (!o_.quiet) {
      fmt::print(stderr, "{}: generated {} ({}) in {:.1f} s\n", o_.who, f.path,
                 FormatBytes(r.file_bytes), r.seconds);
    }
  }
  return 0;
}

// Each file's table and reference checksum; then, for the read patterns of the plan, each
// reader's part and its checksum: a pattern that cannot split a file stops the command here,
// before anything runs.
// Under MPI: every rank runs this loadbench and every host sees the same model, or every rank
// stops with the one line that says which rank differs and how.
int Executor::CheckRanks() {
  if (o_.job == nullptr) return 0;
  const RankJson check = CheckMessage(files_);
  o_.job->Broadcast(check.dump());
  const std::string why = loadbench::CheckRanks(*o_.job, check, o_.who, &files_);
  if (why.empty()) return 0;
  ranks_gone_ = true;
  return Stop(why);
}

// The experiment's link, when it has one, then its server (at the link's far end).
Status Executor::StartServer() {
  if (!e_.link.rates.empty() && o_.job != nullptr && o_.job->hosts() > 1) {
    return Status::BadInput(
        fmt::format("{}: a [link] is made on this host; the job's ranks run on {} hosts", e_.path,
                    o_.job->hosts()));
  }
  LB_RETURN_IF_ERROR(link_.Start(e_, o_.who));
  if (o_.cluster.is_object()) {  // in the store's namespace, at its address
    const Json& store = o_.cluster["store"];
    return remote_.Start(e_, o_.data_dir, o_.who, store.value("address", ""),
                         "/run/netns/" + store.value("netns", ""));
  }
  const Link* link = link_.link();
  LB_RETURN_IF_ERROR(remote_.Start(e_, o_.data_dir, o_.who, link ? link->server_address() : "",
                                   link ? link->netns_path() : ""));
  if (link_.link() != nullptr) LB_RETURN_IF_ERROR(link_.MeasureRtt(remote_.port()));
  return Status::Ok();
}

Status Executor::PrepareFiles() {
  files_.resize(e_.files.size());
  for (size_t i = 0; i < e_.files.size(); ++i) {
    LB_RETURN_IF_ERROR(PrepareFile(e_.files[i].path, o_.who, &files_[i]));
  }
  for (const ExperimentRun& r : e_.runs) {
    if (IsCeilingRun(e_, r)) continue;  // a ceiling reads the whole file
    if (Status s = PrepareParts(r.pattern, r.procs, &files_[r.file]); !s.ok()) {
      return Status::BadInput(
          fmt::format("{}: {}", e_.path.empty() ? "--pattern" : e_.path, s.message()));
    }
  }
  return remote_.Prepare(e_, files_, o_.who);
}

// [system] tune = true: the machine set for the runs (harness/machine/tuning.h), each change in
// the journal before it is made; nothing set when one cannot be (exit 2, nothing run; with
// tune = "auto", said, and the runs go on in the state found).
Status Executor::TuneMachine() {
  if (!e_.system.tune) return Status::Ok();
  std::vector<SettingChange> done;
  if (Status s = TuneSystem(e_.system.page_reporting, {}, &done); !s.ok()) {
    if (e_.system.tune_auto) {
      fmt::print(stderr, "{}: not tuned ({}): the runs are made in the state found\n", o_.who,
                 s.message());
      return Status::Ok();
    }
    return Status::IOError(fmt::format(
        "{}: {}", e_.path.empty() ? "--tune on" : e_.path + ": [system] tune = true", s.message()));
  }
  tune_ = TuneRecord{e_.path.empty() ? "run --tune" : "experiment", NowStamp("%Y-%m-%dT%H:%M:%SZ"),
                     e_.system.page_reporting, done};
  for (const SettingChange& c : done) {
    if (!o_.quiet)
      fmt::print(stderr, "{}: tuned {}: {} -> {}\n", o_.who, c.path, c.before, c.after);
  }
  if (done.empty() && !o_.quiet) {
    fmt::print(stderr, "{}: the machine is in the tuned state already\n", o_.who);
  }
  return Status::Ok();
}

// [system] settle (the default): as much new memory as a run uses, touched and given back just
// before the runs (harness/machine/settle.h); what was touched, or null when nothing was (a
// model under 32 MiB: its first run faults too little to matter).
Json Executor::SettleBeforeRuns() {
  if (!e_.system.settle) return nullptr;
  uint64_t largest = 0;
  for (const PreparedFile& f : files_) largest = std::max(largest, f.table.file_size);
  if (largest < (uint64_t{32} << 20)) return nullptr;
  const Settled s = SettleMemory(SettleBytes(largest));
  if (s.bytes == 0) return nullptr;
  if (!o_.quiet) {
    fmt::print(stderr, "{}: touched {} of new memory before the first run ({:.1f} s)\n", o_.who,
               FormatBytes(s.bytes), s.seconds);
  }
  return {{"bytes", s.bytes}, {"seconds", s.seconds}};
}

// What TuneMachine changed, written back; one that cannot be stays in the journal, for the next
// command that measures.
void Executor::RestoreMachine() {
  if (!tune_) return;
  std::vector<std::string> said;
  const Status s = RestoreSystem(tune_->changes, &said);
  for (const std::string& line : said) fmt::print(stderr, "{}: restored {}\n", o_.who, line);
  if (!s.ok()) {
    fmt::print(stderr, "{}: WARNING: {}; the next command that measures tries again\n", o_.who,
               s.message());
  }
  tune_.reset();
}

// env.json of a new results folder: the machine, how runs are measured, the plan's settings.
Json Executor::NewEnv(const Json& stability) const {
  Json env = CollectEnv(files_[0].path);
  AddMeasurementEnv(files_[0].path, o_.counters, o_.sample_ms, &env);
  env["command_line"] = o_.command_line;
  env["experiment"] = e_.name;
  if (!e_.path.empty()) env["experiment_file"] = {{"path", e_.path}, {"question", e_.question}};
  env["rounds"] = RoundsEnv(e_);
  env["stability"] = stability;
  env["files"] = Json::array();
  for (const PreparedFile& f : files_) env["files"].push_back(FileEnv(f));
  if (files_.size() == 1) env["file"] = FileEnv(files_[0]);
  if (remote_.serving()) env["server"] = remote_.Env();
  if (link_.link() != nullptr) env["link"] = link_.Env();
  if (o_.cluster.is_object()) env["cluster"] = o_.cluster;
  if (e_.procs.size() == 1 && e_.procs[0] > 1) env["procs"] = e_.procs[0];
  if (o_.job != nullptr) env["mpi"] = MpiEnv(*o_.job);
  if (e_.memory_limits.size() == 1 && e_.memory_limits[0] > 0) {
    env["memory_limit_bytes"] = e_.memory_limits[0];
  }
  env["sessions"] = Json::array();
  return env;
}

// The stability check (harness/machine/stability.h): a busy machine is waited for, up to
// --settle-wait, with what is busy said as it waits, and how long it took said after.
Json Executor::CheckMachine() const {
  StabilityOptions check;
  check.max_wait_s = o_.settle_wait_s;
  check.file_bytes = files_[0].table.file_size;
  // Under MPI the job's other ranks on this host are this command too: they are its launcher's
  // children, as this rank is.
  if (o_.job != nullptr) check.self_pid = static_cast<int>(::getppid());
  if (!o_.quiet) {
    check.on_wait = [this](double waited_s, const std::string& busy) {
      fmt::print(stderr,
                 "{}: waiting for the machine to settle ({:.0f} s of at most {:.0f} s): {}\n",
                 o_.who, waited_s, o_.settle_wait_s, busy);
    };
  }
  Json j = CheckStability(check);
  if (!o_.quiet && j["settled"].get<bool>() && j["waited_s"].get<double>() > 0) {
    fmt::print(stderr, "{}: the machine settled after {:.1f} s of waiting\n", o_.who,
               j["waited_s"].get<double>());
  }
  return j;
}

// The results folder: env.json (a resume adds itself to its sessions), the experiment file
// beside it, and runs.jsonl open for appending.
Status Executor::OpenResults() {
  LB_RETURN_IF_ERROR(MakeDirs(o_.out_dir));
  SetUpProfiles();
  const Json synced = SyncDirtyPages();
  if (!synced.is_null() && !o_.quiet) {
    fmt::print(stderr,
               "{}: wrote {} of dirty pages back to disk (sync, {:.1f} s) before the runs\n",
               o_.who, FormatBytes(synced["bytes"].get<uint64_t>()),
               synced["seconds"].get<double>());
  }
  stability_ = CheckMachine();
  stability_["synced_before"] = synced;
  if (std::ifstream in(o_.out_dir + "/env.json"); in && !recorded_.empty()) {
    env_ = Json::parse(in, nullptr, false);
  }
  if (!env_.is_object() || !env_.contains("sessions")) env_ = NewEnv(stability_);
  const Json settled = SettleBeforeRuns();
  // A resumed experiment may have changed its reps (--reps): the latest settings count, and so
  // does the machine's state; each session says whether it ran tuned.
  env_["rounds"] = RoundsEnv(e_);
  env_["system"] = SystemEnvNow(files_[0].path, tune_ ? &*tune_ : nullptr);
  env_.erase("profile");
  if (rs_.measure.profile_hz > 0) env_["profile"] = ProfileEnv();
  env_["sessions"].push_back({{"started_at", NowStamp("%Y-%m-%dT%H:%M:%SZ")},
                              {"command_line", o_.command_line},
                              {"runs_recorded_before", recorded_records_},
                              {"stability", stability_},
                              {"system_tuned", env_["system"]["tuned"]},
                              {"settled", settled}});
  if (o_.cluster.is_object()) {  // each session makes and measures the cluster anew
    env_["sessions"].back()["cluster"] = o_.cluster;
    env_["cluster"] = o_.cluster;
  }
  LB_RETURN_IF_ERROR(WriteJsonFile(o_.out_dir + "/env.json", env_));
  created_out_dir_ = false;  // it holds results now
  // The experiment as it was run, beside its results.
  if (!e_.path.empty()) LB_RETURN_IF_ERROR(CopyFileWhole(e_.path, o_.out_dir + "/experiment.toml"));
  LB_RETURN_IF_ERROR(out_.Open(runs_path_));
  rs_.measure.experiment = e_.name;
  rs_.measure.out_dir = o_.out_dir;
  rs_.measure.counters = o_.counters;
  rs_.measure.sample_ms = o_.sample_ms;
  rs_.measure.timeout_s = e_.timeout_s;
  rs_.measure.s3rver = remote_.s3rver();
  if (remote_.serving()) rs_.measure.meters = &meters_;
  rs_.measure.ceilings[kCeiling] = &disk_ceiling_;
  link_.Wire(remote_, &rs_.measure);
  rs_.reporter.out = &out_;
  rs_.measure.job = o_.job;
  rs_.measure.cluster = o_.cluster.is_object();
  rs_.measure.session = static_cast<int>(env_["sessions"].size()) - 1;
  rs_.reporter.log = o_.verbose;
  return Status::Ok();
}

// Profiles asked for: perf found and allowed here, or why every record will be without one
// (said once now, and in env.json).
void Executor::SetUpProfiles() {
  if (!e_.profile) return;
  rs_.measure.profile_hz = e_.profile_hz;
  if (Status s = FindProfiler(&rs_.measure.perf); !s.ok()) {
    rs_.measure.profile_unavailable = s.message();
    fmt::print(stderr, "{}: no profiles: {}; the runs go on without them\n", o_.who, s.message());
  }
}

// env.json's "profile": how loads are profiled, or why they are not.
Json Executor::ProfileEnv() const {
  Json j = {{"event", "cpu-clock"},
            {"hz", rs_.measure.profile_hz},
            {"call_chains", "kernel and user, frame pointers"},
            {"region", "the worker's timed region (perf --control, enabled and disabled by "
                       "the worker)"}};
  if (rs_.measure.profile_unavailable.empty()) {
    j["perf"] = rs_.measure.perf;
  } else {
    j["unavailable"] = rs_.measure.profile_unavailable;
  }
  return j;
}

// The plan's runs not yet recorded, with their estimates for the time left.
void Executor::PlanWhatIsLeft() {
  std::optional<Ceilings> ceilings;
  std::string why;
  if (auto probe = CachedProbe(files_[0].path, &why)) ceilings = CeilingsOf(*probe);
  std::vector<Eta::Item> items;
  for (const ExperimentRun& r : e_.runs) {
    const RunPoint p = PointOf(e_, r);
    const int records = IsCeilingName(p.spec.name) ? 1 : r.procs;  // a ceiling is one read
    rs_.reporter.total += records;
    if (recorded_.count(RunKey(files_[r.file].path, p))) {
      rs_.reporter.done += records;
      continue;
    }
    double est = 0;
    if (ceilings && p.unsupported.empty()) {
      est = EstimateRunSeconds(*ceilings, files_[r.file].table.file_size, p.spec, p.cache, p.procs);
      est = EstimateOnLink(e_, r, files_[r.file].table.file_size, est);
      if (e_.timeout_s > 0) est = std::min(est, e_.timeout_s);
    }
    todo_.push_back(&r);
    items.push_back({files_[r.file].path + "|" + p.spec.text,
                     fmt::format("{}|{}|{}|{}", p.cache, p.procs, p.pattern.Text(), p.memory_limit),
                     est});
  }
  eta_.emplace(std::move(items));
  if (rs_.reporter.total > 0)
    tenths_shown_ = static_cast<int>(rs_.reporter.done * 10 / rs_.reporter.total);
}

// What is about to happen, and what may weigh on the figures.
void Executor::Announce() {
  for (const Json& w : stability_["warnings"]) {
    fmt::print(stderr, "{}: WARNING before the runs: {}\n", o_.who, w.get<std::string>());
  }
  if (o_.quiet) return;
  if (o_.resume && todo_.size() < e_.runs.size()) {
    fmt::print(stderr, "{}: {}: {} runs planned, {} already recorded, {} to run -> {}\n", o_.who,
               e_.name, e_.runs.size(), e_.runs.size() - todo_.size(), todo_.size(), o_.out_dir);
  } else {
    const PreparedFile& f = files_[0];
    fmt::print(stderr, "{}: {} ({}, {} tensors), {} runs{} -> {}\n", o_.who, f.path,
               FormatBytes(f.table.file_size), f.table.tensors.size(), rs_.reporter.total,
               e_.auto_reps ? " at most" : "", o_.out_dir);
  }
  if (!rs_.root) {
    fmt::print(stderr,
               "{}: not root: cold runs use posix_fadvise(DONTNEED) instead of "
               "drop_caches (recorded in env.json); each cold start is still checked\n",
               o_.who);
  }
}

// Runs the planned runs up to and including round `last_rep`.
Status Executor::RunThrough(int last_rep, bool* stop) {
  for (; next_ < todo_.size() && todo_[next_]->rep <= last_rep; ++next_) {
    const ExperimentRun& run = *todo_[next_];
    LB_RETURN_IF_ERROR(EnterStorage(run));
    if (Interrupted()) return Status::Ok();  // a storage interrupted while it was made
    RunPoint p = PointOf(e_, run);
    storages_.Judge(&p);
    progress_.Show(fmt::format(
        "[{}/{}] {} {} rep {}{}{}{}{} ... ETA {}{}", rs_.reporter.done, rs_.reporter.total, p.cache,
        p.spec.text, p.rep, p.procs > 1 ? fmt::format(" x{} procs", p.procs) : "",
        p.memory_limit ? " limit " + FormatBytes(p.memory_limit) : "",
        p.link.empty() ? "" : " link " + p.link, p.storage.empty() ? "" : " on " + p.storage,
        e_.auto_reps ? "at most " : "", eta_->Left(next_)));
    rs_.reporter.clear_line = progress_.on();
    const auto t0 = Clock::now();
    LB_RETURN_IF_ERROR(link_.ShapeFor(e_, run));
    const PreparedFile* on_storage = storages_.FileFor(run);
    Status s = MeasureRun(rs_.measure, rs_.reporter,
                          on_storage ? *on_storage : remote_.For(e_, files_, run), p, stop);
    progress_.Clear();
    LB_RETURN_IF_ERROR(s);
    if (*stop) return Status::Ok();
    eta_->Done(next_, SecondsSince(t0));
    Milestone();
  }
  return Status::Ok();
}

// Run `run`'s storage made (the one before removed) when the runs reach it, the records'
// device counters read from it, and env.json's `storages` written as each is made.
Status Executor::EnterStorage(const ExperimentRun& run) {
  if (e_.storages.empty()) return Status::Ok();
  progress_.Clear();
  LB_RETURN_IF_ERROR(storages_.EnterFor(e_, run, files_, remote_, o_.who));
  rs_.measure.storage = storages_.storage();
  if (!storages_.changed()) return Status::Ok();
  storages_.ClearChanged();
  // One entry per storage: made again by a resumed session, the latest as made.
  Json& all = env_["storages"];
  if (!all.is_array()) all = Json::array();
  const Json& made = storages_.Env().back();
  for (auto it = all.begin(); it != all.end();) {
    it = it->value("label", "") == made.value("label", "") ? all.erase(it) : it + 1;
  }
  all.push_back(made);
  return WriteJsonFile(o_.out_dir + "/env.json", env_);
}

// At every tenth of the runs: off a terminal, where no progress line is redrawn (a log, CI), a
// line with the time so far and the time left; at the first, env.json's session records that
// estimate, so that a results folder shows how well it held (docs/results-format.md).
void Executor::Milestone() {
  if (rs_.reporter.total == 0) return;
  const int tenths = static_cast<int>(rs_.reporter.done * 10 / rs_.reporter.total);
  if (tenths <= tenths_shown_ || rs_.reporter.done >= rs_.reporter.total) return;
  tenths_shown_ = tenths;
  const double elapsed = SecondsSince(runs_start_);
  const std::optional<double> left = eta_->Seconds(next_ + 1);
  if (!estimate_recorded_ && left) {
    estimate_recorded_ = true;
    env_["sessions"].back()["estimate"] = {{"runs_done", rs_.reporter.done},
                                           {"runs_total", rs_.reporter.total},
                                           {"elapsed_s", elapsed},
                                           {"left_s", *left}};
    if (Status w = WriteJsonFile(o_.out_dir + "/env.json", env_); !w.ok()) {
      fmt::print(stderr, "{}: {}\n", o_.who, w.message());
    }
  }
  if (progress_.on() || o_.quiet || o_.verbose) return;
  fmt::print(stderr, "{}: {}/{} runs ({}%) in {}; {}{} left\n", o_.who, rs_.reporter.done,
             rs_.reporter.total, rs_.reporter.done * 100 / rs_.reporter.total,
             DurationText(elapsed), e_.auto_reps ? "at most " : "", eta_->Left(next_ + 1));
}

// Rounds until every paired ratio with the baseline is known well enough, or a limit.
Status Executor::RunAdaptive() {
  const auto start = Clock::now();
  RoundDriver d;
  d.run_round = [&](int round, bool* stop) { return RunThrough(round, stop); };
  d.records = [&] { return ReadRecords(runs_path_); };
  d.now_s = [&] { return SecondsSince(start); };
  d.after_round = [&](const RoundsVerdict& v, const std::string& why) {
    const Json j = AdaptiveJson(e_.autoreps, v, d.now_s(), why);
    if (Status w = WriteJsonFile(o_.out_dir + "/adaptive.json", j); !w.ok()) {
      fmt::print(stderr, "{}: {}\n", o_.who, w.message());
    }
  };
  LB_RETURN_IF_ERROR(RunAutoRounds(e_.autoreps, e_.baseline, d, &stopped_, &verdict_));
  interrupted_ = stopped_ == "interrupted";
  return Status::Ok();
}

// What the strategies with a cleanup leave for each file, as the leftovers journal names it
// ("NAME\tFILE").
std::vector<std::string> Executor::StrategyLeftovers() const {
  std::vector<std::string> out;
  for (const auto& s : e_.strategies) {
    const StrategyInfo* info = FindStrategy(s.spec.name);
    if (info == nullptr || info->cleanup == nullptr) continue;
    for (const auto& f : files_) out.push_back(s.spec.name + "\t" + f.path);
  }
  return out;
}

void Executor::CleanUpStrategies() {
  if (cleaned_up_) return;
  cleaned_up_ = true;
  std::vector<StrategySpec> specs;
  for (const auto& s : e_.strategies) specs.push_back(s.spec);
  for (const auto& f : files_) CleanupStrategies(specs, f.path, o_.who);
  for (const std::string& what : StrategyLeftovers()) UntrackLeftover(Leftover::kStrategy, what);
}

void Executor::RemoveGenerated() const {
  for (const std::string& path : generated_) {
    if (::unlink(path.c_str()) == 0) {
      fmt::print(stderr, "{}: removed {}\n", o_.who, path);
    } else {
      fmt::print(stderr, "{}: {}\n", o_.who,
                 Status::FromErrno("could not remove " + path, errno).message());
    }
  }
}

// The summary of every run in the folder (earlier sessions' included), and the exit code.
int Executor::Finish() {
  storages_.Remove();
  rs_.measure.storage = nullptr;
  const std::vector<Json> all = ReadRecords(runs_path_);
  if (!o_.quiet) {
    fmt::print("\n{}{}{}", SummaryTable(all), ReadersTable(all),
               NoiseSummary(all, e_.baseline, o_.verbose));
  }
  if (e_.auto_reps) fmt::print("{}", AutoRepsLine(e_.autoreps, verdict_, stopped_));
  fmt::print("results: {} ({} runs), {}/env.json\n", runs_path_, all.size(), o_.out_dir);
  std::fflush(stdout);  // the summary before the messages below
  if (interrupted_ || Interrupted()) {
    if (e_.path.empty()) {
      return Stop(fmt::format("interrupted after {} of {} runs; finished runs are kept in {}; to "
                              "resume:\n  {}",
                              rs_.reporter.records.size(), rs_.reporter.total, runs_path_,
                              ResumeCommand()),
                  130);
    }
    return Stop(fmt::format("interrupted: {} of {} runs recorded in {}; to resume:\n  {}",
                            rs_.reporter.done, rs_.reporter.total, runs_path_, ResumeCommand()),
                130);
  }
  if (o_.cleanup) {
    CleanUpStrategies();
    RemoveGenerated();
  }
  if (const int bad = CountBad(rs_.reporter.records); bad > 0) {
    return Stop(fmt::format("{} of {} runs{} failed or were invalid (see {})", bad,
                            rs_.reporter.records.size(), o_.resume ? " of this session" : "",
                            o_.resume ? runs_path_ : "runs.jsonl"),
                1);
  }
  return 0;
}

}  // namespace

namespace {

// Every rank of an MPI job: rank 0 executes, the others follow; all end with rank 0's code.
int ExecuteInJob(const Experiment& e, ExecuteOptions o) {
  Job job;
  if (Status s = job.Join(); !s.ok()) {
    fmt::print(stderr, "{}: started by an MPI launcher, but {}\n", o.who, s.message());
    return 2;
  }
  o.job = &job;
  if (Status s = ClusterOfThisRank(&o.cluster); !s.ok()) {
    if (job.rank() == 0) fmt::print(stderr, "{}: {}\n", o.who, s.message());
    return 2;
  }
  if (e.cluster.on() && !o.cluster.is_object()) {
    if (job.rank() == 0) {
      fmt::print(stderr,
                 "{}: {} has a [cluster]: start it without mpirun, and loadbench makes "
                 "the cluster and runs mpirun on it\n",
                 o.who, e.path);
    }
    return 2;
  }
  if (job.rank() != 0) {
    o.quiet = true;
    return FollowJob(job, o);
  }
  Experiment planned = e;
  if (!planned.procs_given) {
    planned.procs = {job.size()};
    PlanRuns(&planned);
  }
  Executor x(planned, o);
  const int code = x.Run();
  if (!x.ranks_gone()) EndJob(job, code);
  return code;
}

}  // namespace

int Execute(const Experiment& e, const ExecuteOptions& o) {
  if (LaunchedByMpi()) return ExecuteInJob(e, o);
  nlohmann::ordered_json cluster;
  if (Status s = ClusterOfThisRank(&cluster); !s.ok()) {  // set outside a cluster's ranks
    fmt::print(stderr, "{}: {}\n", o.who, s.message());
    return 2;
  }
  if (e.cluster.on()) return ExecuteOnCluster(e, o);
  return Executor(e, o).Run();
}

}  // namespace loadbench
