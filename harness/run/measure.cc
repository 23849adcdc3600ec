#include "harness/run/measure.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/probe/probe_measure.h"
#include "harness/ranks/across.h"
#include "harness/run/exec.h"
#include "harness/run/profile.h"
#include "harness/run/spawn.h"
#include "harness/system/cache.h"
#include "harness/system/cgroup.h"
#include "harness/system/interrupt.h"
#include "harness/system/timeline.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"
#include "loaders/base/units.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

// The run id of the `i`th record of the next run: <stamp>-<sequence>.
std::string RunId(const RunSession& rs, size_t i) {
  return fmt::format("{}-{:04d}", rs.stamp, rs.seq + 1 + static_cast<int>(i));
}

// What identifies every record of `p`: the runner's part before anything is measured.
RunRecord BaseRecord(const RunSession& rs, const PreparedFile& file, const RunPoint& p) {
  RunRecord r;
  r.run_id = RunId(rs, 0);
  r.experiment = rs.experiment;
  r.strategy = p.spec.name;
  r.strategy_spec = p.spec.text;
  if (std::string label; LabelOf(p.spec, &label).ok() && !label.empty()) r.label = label;
  r.file = file.path;
  r.format = file.table.format;
  r.file_bytes = file.table.file_size;
  if (file.table.sharded()) r.shards = file.table.shards.size();
  r.cache = p.cache;
  r.rep = p.rep;
  if (p.position >= 0) r.position = p.position;
  if (!rs.previous.empty()) r.after = rs.previous;
  if (p.procs > 1) r.procs = p.procs;
  if (p.procs > 1) r.pattern = p.pattern;
  if (p.memory_limit > 0) r.memory_limit_bytes = p.memory_limit;
  r.started_at = NowUtcMs();
  return r;
}

// The line logged for a record.
std::string LogDetail(const PreparedFile& file, const RunRecord& r) {
  if (r.status != "ok") return r.error.value_or("");
  if (r.strategy == kCeiling) {
    return fmt::format("{:.3f} s, {:.2f} GB/s: the device now", r.wall_s.value_or(0),
                       r.gb_per_s.value_or(0));
  }
  // A reader of a part delivers the part's bytes, not the file's.
  const uint64_t bytes = r.pattern.value_or("replicated") != "replicated"
                             ? r.tensor_bytes.value_or(0)
                             : file.table.file_size;
  return fmt::format("{:.3f} s, {:.2f} GB/s, peak RSS {}{}", r.wall_s.value_or(0),
                     static_cast<double>(bytes) / r.wall_s.value_or(0) / 1e9,
                     FormatBytes(r.peak_rss_bytes.value_or(0)),
                     r.verify == "none" ? ", unverified (no checksum)" : "");
}

// Appends the records of one run to runs.jsonl and logs them.
Status Record(RunSession& rs, const PreparedFile& file, const RunPoint& p,
              std::vector<RunRecord>& batch) {
  const std::string ended_at = NowUtcMs();
  for (RunRecord& r : batch) {
    r.ended_at = ended_at;
    ++rs.seq;
    ++rs.done;
    LB_RETURN_IF_ERROR(rs.out->Append(RecordJson(r)));
    // Without --verbose: a run that is not ok; an unsupported strategy once, not every round.
    const bool said = r.status == "unsupported" && !rs.said_unsupported.insert(p.spec.text).second;
    if (rs.log || (r.status != "ok" && !said)) {
      fmt::print(stderr, "{}[{}/{}] {} {}{} rep {}{}{}: {} {}\n", rs.clear_line ? "\r\033[K" : "",
                 rs.done, rs.total, p.cache, p.spec.text,
                 p.procs > 1 && p.pattern != "replicated" ? " " + p.pattern : "", p.rep,
                 p.memory_limit > 0 ? fmt::format(" limit {}", FormatBytes(p.memory_limit)) : "",
                 r.proc ? fmt::format(" {} {}", r.rank ? "rank" : "proc", *r.proc) : "",
                 r.status, LogDetail(file, r));
    }
    rs.records.push_back(std::move(r));
  }
  // An unsupported run did nothing to the machine: the next run's predecessor is the one before.
  if (rs.records.back().status != "unsupported") rs.previous = p.spec.text;
  return Status::Ok();
}

// On this kind of VM a cold run that comes right after the ceiling's O_DIRECT read is slow: 1.39x
// its group's median against 0.93x after another run (40 A/A experiments, docs/rounds.md). A
// buffered read of the file in between takes most of that (1.12x against 0.90x over 12), so
// that the strategies' runs pay less for the ceiling. Its seconds, or nullopt when it failed.
std::optional<double> Settle(const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = WarmFile(path); !s.ok()) {
    fmt::print(stderr, "loadbench: the read after the ceiling: {}\n", s.message());
    return std::nullopt;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The ceiling run, in this process (its buffers are 32 MiB): the probe's cold direct read of
// the file's whole MiBs, which drops the file's pages and checks them gone first.
Status MeasureCeiling(RunSession& rs, const PreparedFile& file, const RunPoint& p,
                      bool* interrupted) {
  RunRecord r = BaseRecord(rs, file, p);
  r.params = {{"queue_depth", probe::kQueueDepth}, {"block_bytes", probe::kBlockBytes},
              {"direct", "on"}};
  // A sharded model's ceiling is its first shard's: the device's speed, read the same way.
  const std::string& path = file.table.shards.at(0).path;
  const uint64_t bytes = file.table.shards[0].file_size / probe::kBlockBytes * probe::kBlockBytes;
  UniqueFd direct;
  if (bytes == 0) {
    r.status = "unsupported";
    r.error = "the file is smaller than one 1 MiB request";
  } else if (Status s = OpenReadOnly(path, O_DIRECT, &direct); !s.ok()) {
    r.status = "unsupported";
    r.error = fmt::format("O_DIRECT: {}", s.message());
  } else {
    direct.reset();
    const nlohmann::ordered_json m = probe::ColdDirectRead(path, bytes, 1);
    if (Interrupted()) {
      *interrupted = true;
      return Status::Ok();  // no record: the run did not finish
    }
    const auto g = m.find("gb_per_s");
    if (g != m.end() && g->is_number() && g->get<double>() > 0) {
      r.status = "ok";
      r.wall_s = static_cast<double>(bytes) / (g->get<double>() * 1e9);
      r.ceiling_bytes = bytes;
      r.gb_per_s = g->get<double>();
      r.settle_s = Settle(path);
    } else {
      r.error = m.value("reason", "the ceiling read gave no figure");
    }
  }
  std::vector<RunRecord> batch = {std::move(r)};
  return Record(rs, file, p, batch);
}

// The strategy's options as the run resolves them, or why it cannot run here.
struct Resolved {
  const StrategyInfo* info = nullptr;
  nlohmann::ordered_json params = nlohmann::ordered_json::object(), use;
  std::string unsupported;
};

Resolved Resolve(const RunPoint& p) {
  Resolved out;
  out.info = FindStrategy(p.spec.name);
  out.unsupported = p.unsupported;
  if (out.info == nullptr && out.unsupported.empty()) out.unsupported = NotBuiltReason(p.spec.name);
  if (out.info != nullptr) {
    Params params;
    UseOptions use;
    Status s = ResolveSpec(*out.info, p.spec, &params, &use);
    if (s.ok()) out.params = params.ToJson(), out.use = use.ToJson();
    if (!s.ok() && out.unsupported.empty()) out.unsupported = s.message();
    if (out.unsupported.empty()) out.unsupported = out.info->unsupported_reason();
  }
  if (out.info == nullptr || out.params.empty()) {
    for (const auto& [k, v] : p.spec.options) out.params[k] = v;  // as asked, for the record
  }
  return out;
}

// The cache state and the cgroup a run starts from, made and checked before its workers.
struct Start {
  std::unique_ptr<MemoryCgroup> cgroup;
  DropMethod drop = DropMethod::kDropCaches;
  ModelResidency before;
};

// The cgroup first: where none can be made, the run is unsupported before any work.
Status PrepareStart(const RunSession& rs, const PreparedFile& file, const RunPoint& p,
                    const StrategyInfo* info, Start* st) {
  st->drop = rs.root ? DropMethod::kDropCaches : DropMethod::kFadvise;
  if (p.memory_limit > 0) LB_RETURN_IF_ERROR(MemoryCgroup::Create(p.memory_limit, &st->cgroup));
  if (p.cache == "cold" && info != nullptr && info->cleanup != nullptr) {
    std::vector<std::string> removed;
    LB_RETURN_IF_ERROR(info->cleanup(file.path, &removed));
  }
  if (p.cache == "cold") {
    LB_RETURN_IF_ERROR(DropModelCache(file.table, &st->drop));
  } else {
    LB_RETURN_IF_ERROR(WarmModel(file.table));
  }
  // The tool's own code (dropped by drop_caches, or by an earlier command's) back in before the
  // file is checked, so that the worker does not page it in on the clock: its reads would count
  // as the load's, and a warm run that reads from storage is invalid.
  ReadBackOwnCode();
  return MeasureModelResidency(file.table, &st->before);
}

// Kills by the OOM killer since `before` (a cgroup's count when the run had one, else the
// machine's), or nullopt when the kernel does not count them.
std::optional<uint64_t> OomKillsSince(const MemoryCgroup* cg, std::optional<uint64_t> before) {
  const std::optional<uint64_t> now = cg != nullptr ? cg->OomKills() : SystemOomKills();
  if (!now) return std::nullopt;
  return *now - (cg != nullptr ? 0 : before.value_or(*now));
}

// What the runner saw around the workers: the page cache, the file, the OOM killer.
struct Around {
  std::optional<uint64_t> cached_before, cached_after, oom_before, oom_kills;
  std::optional<ModelResidency> after;
};

Around Before() {
  Around a;
  a.cached_before = MeminfoBytes("Cached");
  a.oom_before = SystemOomKills();
  return a;
}

void After(const Start& st, const PreparedFile& file, Around* a) {
  a->cached_after = MeminfoBytes("Cached");
  a->oom_kills = OomKillsSince(st.cgroup.get(), a->oom_before);
  if (ModelResidency after; MeasureModelResidency(file.table, &after).ok()) a->after = after;
}

// The runner's fields that say what the run is, over whatever the worker sent.
void Identify(const RunRecord& base, RunRecord* r) {
  r->run_id = base.run_id;
  r->experiment = base.experiment;
  r->strategy = base.strategy;
  r->strategy_spec = base.strategy_spec;
  if (r->params.empty()) r->params = base.params;
  if (r->use.is_null()) r->use = base.use;
  r->label = base.label;
  r->file = base.file;
  r->format = base.format;
  r->file_bytes = base.file_bytes;
  r->shards = base.shards;
  r->cache = base.cache;
  r->rep = base.rep;
  r->position = base.position;
  r->after = base.after;
  r->procs = base.procs;
  r->pattern = base.pattern;
  r->memory_limit_bytes = base.memory_limit_bytes;
  r->started_at = base.started_at;
}

// A record whose figures came from a cache state the run did not promise counts for nothing.
void CheckStartState(const RunPoint& p, double frac, RunRecord* r) {
  if (r->status != "ok") return;
  if (std::string why = StartStateProblem(p.cache, frac); !why.empty()) {
    r->status = "invalid";
    r->error = std::move(why);
  }
}

// Whether a strategy with these options reads through the page cache (odirect, gds and
// io_uring with direct=on do not).
bool ReadsThroughPageCache(const StrategyInfo& info, const nlohmann::ordered_json& params) {
  if ((info.flags & kDirectIO) == 0) return true;
  const auto direct = params.find("direct");
  return direct != params.end() && direct->is_string() && *direct != "on";
}

// A warm run that went to storage for more than a trace of the file measured another state.
void CheckWarmReads(const StrategyInfo& info, const RunPoint& p, RunRecord* r) {
  if (r->status != "ok" || p.cache != "warm" || !r->read_bytes) return;
  if (!ReadsThroughPageCache(info, r->params)) return;
  if (std::string why = WarmReadProblem(*r->read_bytes, r->file_bytes); !why.empty()) {
    r->status = "invalid";
    r->error = std::move(why);
  }
}

// The page cache's growth over the run: the file's own pages, and the whole cache (which other
// activity on the machine moves too); and what a container would have been charged.
void CacheAndCgroup(const Start& st, const Around& a, MemoryFigures* m) {
  if (a.after) {
    m->file_cache_growth_bytes = (static_cast<int64_t>(a.after->total.resident_pages) -
                                  static_cast<int64_t>(st.before.total.resident_pages)) * 4096;
  }
  if (a.cached_before && a.cached_after) {
    m->page_cache_growth_bytes =
        static_cast<int64_t>(*a.cached_after) - static_cast<int64_t>(*a.cached_before);
  }
  if (st.cgroup) {
    m->cgroup_peak_bytes = st.cgroup->PeakBytes();
    m->cgroup_oom_kills = a.oom_kills;
  }
}

// Why a process killed by `signal` died, when it was the OOM killer (SIGKILL with the OOM
// killer's count up over the run); else nullopt.
std::optional<std::string> OomKilled(const RunPoint& p, int signal, const Around& a) {
  if (signal != SIGKILL || a.oom_kills.value_or(0) == 0) return std::nullopt;
  return p.memory_limit > 0
             ? fmt::format("killed by the OOM killer (SIGKILL) at the memory limit of {}",
                           FormatBytes(p.memory_limit))
             : std::string("killed by the OOM killer (SIGKILL): out of memory");
}

// What the runner measured around any run: the cache state before and after, the page cache
// and the cgroup, and the check of the start state.
void AddOutside(const RunPoint& p, const Start& st, const Around& a, RunRecord* r) {
  r->resident_before = st.before.total.fraction();
  if (r->shards) r->worst_shard_resident = st.before.Worst(p.cache);
  if (p.cache == "cold") r->drop_method = DropMethodName(st.drop);
  if (a.after) r->resident_after = a.after->total.fraction();
  CacheAndCgroup(st, a, &r->memory);
  CheckStartState(p, st.before.Worst(p.cache), r);
}

// A worker's record: its own part, then what the runner measured from outside.
RunRecord Complete(const RunRecord& base, const RunPoint& p, size_t proc, const Start& st,
                   const Around& a, WorkerOutcome& w) {
  RunRecord r = w.error.empty() ? std::move(w.record) : RunRecord{};
  Identify(base, &r);
  if (!w.error.empty()) {
    r.status = "failed";
    r.error = w.error;
    if (auto oom = OomKilled(p, w.signal, a)) {
      r.error = *oom;
      r.oom_killed = true;
    }
  }
  if (p.procs > 1) r.proc = static_cast<int>(proc);
  r.process_s = w.process_s;
  SetProcessUsage(w.usage, &r);
  AddOutside(p, st, a, &r);
  return r;
}

// timelines/RUN_ID.csv for each process that was sampled, its time from its load start.
// A timeline the disk has no room for stops the command (kNotWritten) before its record is
// written; any other failure leaves the record without its timeline, saying why.
Status WriteTimelines(const RunSession& rs,
                      const std::vector<std::vector<TimelineSample>>& timelines,
                      std::vector<RunRecord>& batch) {
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto& samples = timelines[i];
    if (samples.empty()) continue;
    const double zero = batch[i].load_start_mono_s.value_or(samples.front().mono_s);
    const std::string rel = fmt::format("timelines/{}.csv", batch[i].run_id);
    Status t = MakeDirs(rs.out_dir + "/timelines");
    if (t.ok()) t = WriteTimelineCsv(rs.out_dir + "/" + rel, samples, zero);
    if (t.ok()) {
      batch[i].timeline = rel;
    } else if (t.code() == Status::Code::kNotWritten) {
      return t;
    } else {
      fmt::print(stderr, "loadbench: timeline: {}\n", t.message());
    }
  }
  return Status::Ok();
}

// perf's data of a worker and its log, once folded (or not wanted).
void RemoveProfileData(const std::string& data) {
  if (data.empty()) return;
  ::unlink(data.c_str());
  ::unlink((data + ".log").c_str());
}

// profiles/RUN_ID.folded from a worker's perf data, and the record's profile figures; or the
// record's profile null with why. Only a full disk stops the command (kNotWritten); nothing
// here changes the run's status.
Status WriteProfile(const RunSession& rs, const WorkerOutcome& w, RunRecord* r) {
  if (rs.profile_hz <= 0) return Status::Ok();
  r->profile = nlohmann::ordered_json();
  std::string why = !rs.profile_unavailable.empty() ? rs.profile_unavailable : w.profile_error;
  if (w.profile_data.empty() && why.empty()) why = "the worker was not profiled";
  FoldedProfile folded;
  const std::string rel = fmt::format("profiles/{}.folded", r->run_id);
  if (why.empty()) {
    Status s = FoldPerfData(rs.perf, w.profile_data, &folded);
    if (s.ok()) s = WriteFolded(rs.out_dir + "/" + rel, folded);
    if (s.code() == Status::Code::kNotWritten) return s;
    if (!s.ok()) why = s.message();
  }
  RemoveProfileData(w.profile_data);
  if (!why.empty()) {
    r->profile_error = why;
    return Status::Ok();
  }
  r->profile = nlohmann::ordered_json{
      {"folded", rel}, {"event", "cpu-clock"}, {"hz", rs.profile_hz},
      {"samples", folded.samples}, {"stacks", folded.stacks.size()},
      {"on_cpu_s", static_cast<double>(folded.period_ns) / 1e9}};
  return Status::Ok();
}

// What the runner does beside the workers it spawns itself: their timelines and profiles.
Status SampleAndProfile(const RunSession& rs, const PreparedFile& file, SpawnRequest* spawn) {
  for (const ShardInfo& s : file.table.shards) spawn->file_paths.push_back(s.path);
  spawn->sample_s = rs.sample_ms / 1000.0;
  if (rs.profile_hz > 0 && rs.profile_unavailable.empty()) {
    spawn->perf = rs.perf;
    spawn->profile_dir = rs.out_dir + "/profiles";
    spawn->profile_hz = rs.profile_hz;
    LB_RETURN_IF_ERROR(MakeDirs(spawn->profile_dir));
  }
  return Status::Ok();
}

// Spawns the run's workers and completes their records; interrupted, leaves `batch` alone.
// Fails only when a timeline cannot be written.
Status RunWorkers(const RunSession& rs, const PreparedFile& file, const RunPoint& p,
                  const Start& st, std::vector<RunRecord>* batch, bool* interrupted) {
  SpawnRequest spawn;
  spawn.exe = rs.exe;
  spawn.file = file.path;
  spawn.strategy = p.spec.text;
  spawn.counters = rs.counters.empty() ? "none" : fmt::format("{}", fmt::join(rs.counters, ","));
  spawn.expect_checksum = fmt::format("{:016x}", *file.table.expected_checksum);
  spawn.pattern = p.pattern;
  if (p.procs > 1 && p.pattern != "replicated") {
    spawn.parts = p.procs;
    for (uint64_t sum : file.part_checksums.at(PartsKey(p.pattern, p.procs))) {
      spawn.part_checksums.push_back(fmt::format("{:016x}", sum));
    }
  }
  spawn.cgroup_procs = st.cgroup ? st.cgroup->procs_path() : "";
  spawn.procs = p.procs;
  spawn.timeout_s = rs.timeout_s;
  LB_RETURN_IF_ERROR(SampleAndProfile(rs, file, &spawn));
  Around a = Before();
  std::vector<WorkerOutcome> outcomes = SpawnWorkers(spawn, interrupted);
  if (*interrupted) {
    for (const WorkerOutcome& w : outcomes) RemoveProfileData(w.profile_data);
    return Status::Ok();
  }
  After(st, file, &a);
  for (size_t i = 0; i < batch->size(); ++i) {
    (*batch)[i] = Complete((*batch)[i], p, i, st, a, outcomes[i]);
  }
  std::vector<std::vector<TimelineSample>> timelines;
  for (const WorkerOutcome& w : outcomes) timelines.push_back(w.timeline);
  LB_RETURN_IF_ERROR(WriteTimelines(rs, timelines, *batch));
  for (size_t i = 0; i < batch->size(); ++i) {
    LB_RETURN_IF_ERROR(WriteProfile(rs, outcomes[i], &(*batch)[i]));
  }
  return Status::Ok();
}

// What a run left outside its processes (shm: a segment holding the whole file, which nothing
// can reclaim) goes before the next run, whatever that is, so that no run is measured beside it.
void RemoveWhatTheRunLeft(const StrategyInfo& info, const PreparedFile& file) {
  if (info.cleanup == nullptr) return;
  std::vector<std::string> removed;
  if (Status c = info.cleanup(file.path, &removed); !c.ok()) {
    fmt::print(stderr, "loadbench: cleaning up after {}: {}\n", info.name, c.message());
  }
}

// An exec run's command, started and completed into its record; interrupted, leaves it alone.
Status RunExec(const RunSession& rs, const PreparedFile& file, const RunPoint& p,
               ExecRequest req, const Start& st, const ExecMeasured& how, RunRecord* r,
               bool* interrupted) {
  for (const ShardInfo& s : file.table.shards) req.file_paths.push_back(s.path);
  req.cgroup_procs = st.cgroup ? st.cgroup->procs_path() : "";
  req.cgroup_dir = st.cgroup ? st.cgroup->path() : "";
  req.timeout_s = rs.timeout_s;
  req.sample_s = rs.sample_ms / 1000.0;
  Around a = Before();
  ExecOutcome o = RunCommand(req, interrupted);
  if (*interrupted) return Status::Ok();
  After(st, file, &a);
  FillExecRecord(o, file.table.expected_checksum, how, r);
  if (auto oom = OomKilled(p, o.signal, a); oom && r->status == "failed") {
    r->error = *oom;
    r->oom_killed = true;
  }
  AddOutside(p, st, a, r);
  std::vector<RunRecord> one = {*r};
  LB_RETURN_IF_ERROR(WriteTimelines(rs, {o.timeline}, one));
  *r = std::move(one[0]);
  if (rs.profile_hz > 0) {
    r->profile = nlohmann::ordered_json();
    r->profile_error = "exec commands are not profiled: no timed region the profiler could "
                       "be turned on and off at";
  }
  return Status::Ok();
}

// The cache state and a cgroup for an exec run. Without a memory limit a cgroup is only for
// measuring: where none can be made the run goes on, and its record says so.
Status PrepareExec(const RunSession& rs, const PreparedFile& file, const RunPoint& p,
                   Start* st, ExecMeasured* how) {
  LB_RETURN_IF_ERROR(PrepareStart(rs, file, p, nullptr, st));
  if (!st->cgroup) {
    if (Status c = MemoryCgroup::Create(0, &st->cgroup); !c.ok()) how->no_cgroup = c.message();
  }
  if (st->cgroup) how->cgroup = fmt::format("cgroup {}", st->cgroup->version());
  return Status::Ok();
}

// A run of an exec strategy: its command where a worker would be.
Status MeasureExec(RunSession& rs, const PreparedFile& file, const RunPoint& p,
                   bool* interrupted) {
  RunRecord r = BaseRecord(rs, file, p);
  const ExecPlaces places = {file.path, std::filesystem::path(file.path).parent_path().string(),
                             file.table.file_size, PeersDir()};
  ExecRequest req;
  req.argv = FillCommand(*p.exec, places);
  r.command = req.argv;
  Status why = p.procs > 1 ? Status::Unsupported(
                                 "exec runs one command per run; procs > 1 is not offered")
                           : ResolveProgram(*p.exec, req.argv[0], &req.program);
  Start st;
  ExecMeasured how;
  if (why.ok()) why = PrepareExec(rs, file, p, &st, &how);
  if (why.code() == Status::Code::kUnsupported) {
    r.status = "unsupported";
    r.error = why.message();
  } else if (!why.ok()) {
    r.status = "invalid";
    r.error = fmt::format("preparing the {} run: {}", p.cache, why.message());
  } else {
    LB_RETURN_IF_ERROR(RunExec(rs, file, p, std::move(req), st, how, &r, interrupted));
    if (*interrupted) return Status::Ok();  // no record: the run did not finish
  }
  std::vector<RunRecord> batch = {std::move(r)};
  return Record(rs, file, p, batch);
}

// Why a run cannot be made across the job's ranks, or "".
std::string NotAcross(const Job& job, const RunPoint& p) {
  if (p.procs > job.size()) {
    return fmt::format("{} readers, but the job has {} rank{}", p.procs, job.size(),
                       job.size() == 1 ? "" : "s");
  }
  if (p.memory_limit > 0) return "a memory limit is not offered across MPI ranks";
  return "";
}

// The readers' records of a run across ranks: rank 0 spawned its own (timeline, profile), the
// others' came gathered; interrupted anywhere, none.
Status CompleteAcross(const RunSession& rs, const StrategyInfo& info, const RunPoint& p,
                      const std::vector<RankJson>& outcomes, WorkerOutcome& mine,
                      std::vector<RunRecord>* batch) {
  for (size_t k = 0; k < batch->size(); ++k) {
    RunRecord r = ReaderRecord(*rs.job, outcomes, static_cast<int>(k), p.cache);
    Identify((*batch)[k], &r);
    if (p.procs > 1) r.proc = static_cast<int>(k);
    CheckWarmReads(info, p, &r);
    (*batch)[k] = std::move(r);
  }
  std::vector<std::vector<TimelineSample>> timelines(batch->size());
  timelines.front() = std::move(mine.timeline);
  LB_RETURN_IF_ERROR(WriteTimelines(rs, timelines, *batch));
  LB_RETURN_IF_ERROR(WriteProfile(rs, mine, &batch->front()));
  for (size_t k = 1; k < batch->size() && rs.profile_hz > 0; ++k) {
    (*batch)[k].profile = nlohmann::ordered_json();
    (*batch)[k].profile_error = "under MPI only rank 0's reader is profiled";
  }
  return Status::Ok();
}

// A run across the ranks of an MPI job (harness/ranks/across.h): every rank its reader, each
// host's cache state made by its first rank, all starting together.
Status MeasureAcross(RunSession& rs, const PreparedFile& file, const RunPoint& p,
                     const Resolved& res, std::vector<RunRecord>& batch, bool* interrupted) {
  const Job& job = *rs.job;
  const RankJson run = RunMessage(rs, file, p);
  job.Broadcast(run.dump());
  Start st;
  Around a;
  HostSteps host;
  host.prepare = [&] {
    const Status prep = PrepareStart(rs, file, p, res.info, &st);
    a = Before();
    return HostStartJson(prep, st.before, DropMethodName(st.drop), p.cache, a.cached_before);
  };
  host.after = [&] {
    After(st, file, &a);
    return HostAfterJson(a.after, a.cached_after);
  };
  SpawnRequest spawn = ReaderSpawn(job, run, rs.exe);
  LB_RETURN_IF_ERROR(SampleAndProfile(rs, file, &spawn));
  WorkerOutcome mine;
  const auto outcomes = RunOnEveryRank(job, p.procs, spawn, host, &mine, interrupted);
  RemoveWhatTheRunLeft(*res.info, file);
  if (*interrupted) {
    RemoveProfileData(mine.profile_data);
    return Status::Ok();  // no record: the run did not finish
  }
  LB_RETURN_IF_ERROR(CompleteAcross(rs, *res.info, p, outcomes, mine, &batch));
  return Record(rs, file, p, batch);
}

}  // namespace

Status MeasureRun(RunSession& rs, const PreparedFile& file, const RunPoint& p,
                  bool* interrupted) {
  if (p.spec.name == kCeiling) return MeasureCeiling(rs, file, p, interrupted);
  if (p.exec) return MeasureExec(rs, file, p, interrupted);
  Resolved res = Resolve(p);
  if (rs.job != nullptr && res.unsupported.empty()) res.unsupported = NotAcross(*rs.job, p);
  RunRecord base = BaseRecord(rs, file, p);
  base.params = res.params;
  base.use = res.use;
  std::vector<RunRecord> batch(static_cast<size_t>(p.procs), base);
  for (size_t i = 0; i < batch.size(); ++i) batch[i].run_id = RunId(rs, i);
  if (rs.job != nullptr && res.unsupported.empty()) {
    return MeasureAcross(rs, file, p, res, batch, interrupted);
  }
  Start st;
  const Status prep =
      res.unsupported.empty() ? PrepareStart(rs, file, p, res.info, &st) : Status::Ok();
  for (RunRecord& r : batch) {
    if (!res.unsupported.empty() || prep.code() == Status::Code::kUnsupported) {
      r.status = "unsupported";  // here, or no memory cgroup can be made here
      r.error = res.unsupported.empty() ? prep.message() : res.unsupported;
    } else if (!prep.ok()) {
      // A state that cannot be made or checked is not a failure of the strategy, but no figure
      // measured from it may count.
      r.status = "invalid";
      r.error = fmt::format("preparing the {} run: {}", p.cache, prep.message());
    }
  }
  if (res.unsupported.empty() && prep.ok()) {
    const Status ran = RunWorkers(rs, file, p, st, &batch, interrupted);
    RemoveWhatTheRunLeft(*res.info, file);
    LB_RETURN_IF_ERROR(ran);
    if (*interrupted) return Status::Ok();  // no record: the run did not finish
    for (RunRecord& r : batch) CheckWarmReads(*res.info, p, &r);
  }
  return Record(rs, file, p, batch);
}

}  // namespace loadbench
