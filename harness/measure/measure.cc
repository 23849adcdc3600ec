#include "harness/measure/measure.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/launch/ceiling.h"
#include "harness/launch/command.h"
#include "harness/launch/ranks.h"
#include "harness/launch/workers.h"
#include "harness/machine/timeline.h"
#include "harness/measure/complete.h"
#include "harness/measure/host.h"
#include "harness/profile/profile.h"
#include "loaders/blocks/peers.h"
#include "loaders/remote/url.h"
#include "loaders/use/part.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

// What identifies every record of `p`: the runner's part before anything is measured.
RunRecord BaseRecord(const MeasureSettings& s, const Reporter& out, const PreparedFile& file,
                     const RunPoint& p) {
  RunRecord r;
  r.run_id = out.RunId(0);
  r.experiment = s.experiment;
  r.strategy = p.spec.name;
  r.strategy_spec = p.spec.text;
  if (const StrategyInfo* info = FindStrategy(p.spec.name))
    r.strategy_flags = FlagNames(info->flags);
  if (std::string label; LabelOf(p.spec, &label).ok() && !label.empty()) r.label = label;
  r.file = file.origin.empty() ? file.path : file.origin;
  if (!file.read_as.empty()) r.read_as = file.read_as;
  r.format = file.table.format;
  r.file_bytes = file.table.file_size;
  if (file.table.sharded()) r.shards = file.table.shards.size();
  r.cache = p.cache;
  r.rep = p.rep;
  if (p.position >= 0) r.position = p.position;
  if (!out.previous.empty()) r.after = out.previous;
  if (p.procs > 1) r.procs = p.procs;
  if (p.procs > 1) r.pattern = p.pattern.Text();
  if (p.memory_limit > 0) r.memory_limit_bytes = p.memory_limit;
  if (!p.link.empty()) r.link = p.link;
  if (!p.storage.empty()) r.storage = p.storage;
  if (s.cluster) {
    r.nodes = p.procs;
    r.session = s.session;
    r.nic = p.nic, r.uplink = p.uplink;
  }
  r.started_at = NowUtcMs();
  return r;
}

// What the run runs: a ceiling's read, or the strategy with its options as the run resolves
// them, or why it cannot run here; nothing for an exec command.
struct Resolved {
  CeilingRead* ceiling = nullptr;
  const StrategyInfo* info = nullptr;
  nlohmann::ordered_json params = nlohmann::ordered_json::object(), use;
  std::string unsupported;
};

Resolved Resolve(const MeasureSettings& s, const RunPoint& p) {
  Resolved out;
  out.unsupported = p.unsupported;  // known before the run, for a ceiling or a command too
  if (p.exec) return out;
  if (const auto it = s.ceilings.find(p.spec.name); it != s.ceilings.end()) {
    out.ceiling = it->second;
    return out;
  }
  out.info = p.strategy.info;
  if (out.info != nullptr) {
    out.params = p.strategy.params.ToJson(), out.use = p.strategy.use.ToJson();
    if (out.unsupported.empty()) out.unsupported = out.info->unsupported_reason();
  } else {
    if (out.unsupported.empty()) out.unsupported = NotBuiltReason(p.spec.name);
    for (const auto& [k, v] : p.spec.options) out.params[k] = v;  // as asked, for the record
  }
  return out;
}

// The launcher of `p`'s readers: a ceiling's read, the job's ranks (each with its worker or its
// command), or this machine's commands or workers.
std::unique_ptr<Launcher> LauncherFor(const MeasureSettings& s, const RunPoint& p,
                                      const Resolved& res) {
  if (res.ceiling != nullptr) return CeilingLauncher(*res.ceiling);
  if (s.job != nullptr) return RanksLauncher(*s.job, p.exec.has_value());
  if (p.exec) return CommandLauncher();
  return WorkersLauncher();
}

// The tensor bytes of each of `p`'s parts, beside their checksums (PrepareParts checked that
// the pattern splits the model, so no part fails here).
std::vector<uint64_t> PartBytes(const PreparedFile& file, const RunPoint& p) {
  std::vector<uint64_t> bytes;
  for (int k = 0; k < p.procs; ++k) {
    TensorTable part;
    if (!PartOf(file.path, file.table, p.pattern, k, p.procs, &part).ok()) return {};
    bytes.push_back(part.tensor_bytes);
  }
  return bytes;
}

// The run's readers as plain data: what they load and check, for how long, sampled how often;
// a command's argv (its program is found later, when the run is offered).
LaunchRequest RequestOf(const MeasureSettings& s, const PreparedFile& file, const RunPoint& p) {
  LaunchRequest req;
  req.exe = s.exe;
  req.worker.file = file.read_as.empty() ? file.path : file.read_as;
  req.worker.strategy = p.strategy;
  req.worker.counters = s.counters;
  req.worker.expect_checksum = file.table.expected_checksum;
  req.worker.pattern = p.pattern;
  for (const ShardInfo& sh : file.table.shards) req.file_paths.push_back(sh.path);
  req.cache = p.cache;
  if (p.procs > 1 && !p.pattern.replicated()) {
    req.part_checksums = file.part_checksums.at(PartsKey(p.pattern, p.procs));
    req.part_bytes = PartBytes(file, p);
  }
  req.model_bytes = file.table.tensor_bytes;
  req.readers = p.procs;
  req.s3rver = s.s3rver;
  req.link = p.link;
  req.timeout_s = s.timeout_s;
  req.sample_s = s.sample_ms / 1000.0;
  req.peer_token = NewPeerToken();
  req.nic_counters = s.cluster && s.job != nullptr;
  if (p.exec) {
    const ExecPlaces places = {
        req.worker.file, std::filesystem::path(req.worker.file).parent_path().string(),
        file.table.file_size, PeersDir(),
        std::getenv("AWS_ENDPOINT_URL") ? std::getenv("AWS_ENDPOINT_URL") : ""};
    req.argv = FillCommand(*p.exec, places);
    req.timed = p.exec->timed;
  }
  return req;
}

// Why the run cannot be made here, or "": the strategy, the launcher, a command not found.
std::string NotOffered(const RunPoint& p, const Resolved& res, const Launcher& launcher,
                       LaunchRequest* req) {
  if (!res.unsupported.empty()) return res.unsupported;
  if (std::string why = launcher.NotOffered(p.procs, p.memory_limit); !why.empty()) return why;
  if (!p.exec) return "";
  const Status found = ResolveProgram(*p.exec, req->argv.at(0), &req->program);
  return found.ok() ? "" : found.message();
}

// Where perf's data goes, when the readers are profiled.
Status PrepareProfiles(const MeasureSettings& s, const Launcher& launcher, LaunchRequest* req) {
  if (s.profile_hz <= 0 || !s.profile_unavailable.empty() || !launcher.unprofiled(0).empty()) {
    return Status::Ok();
  }
  req->perf = s.perf;
  req->profile_dir = s.out_dir + "/profiles";
  req->profile_hz = s.profile_hz;
  return MakeDirs(req->profile_dir);
}

// perf's data of a reader and its log, once folded (or not wanted).
void RemoveProfileData(const std::string& data) {
  if (data.empty()) return;
  ::unlink(data.c_str());
  ::unlink((data + ".log").c_str());
}

// timelines/RUN_ID.csv for each reader that was sampled, its time from its load start.
// A timeline the disk has no room for stops the command (kNotWritten) before its record is
// written; any other failure leaves the record without its timeline, saying why.
Status WriteTimeline(const std::string& out_dir, const ReaderOutcome& o, RunRecord* r) {
  if (o.timeline.empty()) return Status::Ok();
  const double zero = r->load_start_mono_s.value_or(o.timeline.front().mono_s);
  const std::string rel = fmt::format("timelines/{}.csv", r->run_id);
  Status t = MakeDirs(out_dir + "/timelines");
  if (t.ok()) t = WriteTimelineCsv(out_dir + "/" + rel, o.timeline, zero);
  if (t.ok()) {
    r->timeline = rel;
  } else if (t.code() == Status::Code::kNotWritten) {
    return t;
  } else {
    fmt::print(stderr, "loadbench: timeline: {}\n", t.message());
  }
  return Status::Ok();
}

// The window the worker sent (profile.h): none when it did not finish its load.
std::optional<Window> WindowOf(const RunRecord& r) {
  const RunRecord::Json& j = r.profile_window_mono_s;
  if (!j.is_array()) return std::nullopt;
  Window w;
  for (const auto& span : j) {
    if (!span.is_array() || span.size() != 2 || !span[0].is_number() || !span[1].is_number()) {
      return std::nullopt;
    }
    w.emplace_back(span[0].get<double>(), span[1].get<double>());
  }
  return w;
}

// profiles/RUN_ID.folded from a reader's perf data, and the record's profile figures; or the
// record's profile null with why. Only a full disk stops the command (kNotWritten); nothing
// here changes the run's status.
Status WriteProfile(const MeasureSettings& s, const std::string& unprofiled, const ReaderOutcome& o,
                    RunRecord* r) {
  if (s.profile_hz <= 0) return Status::Ok();
  r->profile = nlohmann::ordered_json();
  std::string why = !unprofiled.empty() ? unprofiled : s.profile_unavailable;
  if (why.empty()) why = o.profile_error;
  if (o.profile_data.empty() && why.empty()) why = "the worker was not profiled";
  FoldedProfile folded;
  const std::string rel = fmt::format("profiles/{}.folded", r->run_id);
  const std::optional<Window> window = WindowOf(*r);
  if (why.empty()) {
    Status f = FoldPerfData(s.perf, o.profile_data, window, &folded);
    if (f.ok()) f = WriteFolded(s.out_dir + "/" + rel, folded);
    if (f.code() == Status::Code::kNotWritten) return f;
    if (!f.ok()) why = f.message();
  }
  RemoveProfileData(o.profile_data);
  if (!why.empty()) {
    r->profile_error = why;
    return Status::Ok();
  }
  r->profile = nlohmann::ordered_json{{"folded", rel},
                                      {"event", "cpu-clock"},
                                      {"hz", s.profile_hz},
                                      {"samples", folded.samples},
                                      {"samples_outside", folded.outside},
                                      {"stacks", folded.stacks.size()},
                                      {"on_cpu_s", static_cast<double>(folded.period_ns) / 1e9}};
  r->profile->update(ProfileFigures(folded, window));
  return Status::Ok();
}

// What moved on the meters between two readings, on a run's record; CPU in 10 ms ticks.
void AddMetered(const MeterReading& before, const MeterReading& after, RunRecord* r) {
  const auto ticks = [](double v) { return std::round(std::max(0.0, v) * 100) / 100; };
  if (after.server_cpu_s) {
    r->server_cpu_s = ticks(*after.server_cpu_s - before.server_cpu_s.value_or(0));
  }
  if (after.mount_cpu_s) {
    r->mount_cpu_s = ticks(*after.mount_cpu_s - before.mount_cpu_s.value_or(0));
  }
  if (after.link_rx_bytes) {
    r->link_rx_bytes = *after.link_rx_bytes - before.link_rx_bytes.value_or(0);
  }
}

// The storage's device counters between two readings, on a run's record.
void AddDeviceFigures(const std::optional<DeviceStat>& before,
                      const std::optional<DeviceStat>& after, RunRecord* r) {
  if (!before || !after) return;
  const auto moved = [](uint64_t a, uint64_t b) { return b >= a ? b - a : 0; };
  r->device_reads = moved(before->reads, after->reads);
  r->device_read_bytes = moved(before->read_sectors, after->read_sectors) * 512;
  r->device_read_merges = moved(before->read_merges, after->read_merges);
  r->device_read_ms = moved(before->read_ms, after->read_ms);
  r->device_queue_ms = moved(before->queue_ms, after->queue_ms);
  if (*r->device_reads == 0) return;
  r->device_request_bytes =
      static_cast<double>(*r->device_read_bytes) / static_cast<double>(*r->device_reads);
  if (r->wall_s && *r->wall_s > 0) {
    r->device_reads_per_s = static_cast<double>(*r->device_reads) / *r->wall_s;
  }
}

// The readers launched with the host prepared around them and the meters read from the end of
// its preparation to their end, their records completed into `batch`, their timelines and
// profiles written; interrupted, leaves `batch` alone.
Status LaunchAndComplete(const MeasureSettings& s, const PreparedFile& file, const RunPoint& p,
                         const Resolved& res, Launcher& launcher, const LaunchRequest& req,
                         std::vector<RunRecord>* batch, bool* interrupted) {
  Host host(
      {&file.table, file.path, p.cache, res.info, p.memory_limit, launcher.measuring_cgroup()});
  const Meters* meters = launcher.in_process() ? nullptr : s.meters;
  MeterReading before, after;
  // The storage's device: around a ceiling's read (which makes its own start state), from the
  // end of the host's preparation for readers.
  std::optional<DeviceStat> device_before, device_after;
  if (s.storage != nullptr) device_before = s.storage->Stat();
  HostSteps steps = host.Steps();
  if (meters != nullptr || s.storage != nullptr) {
    steps.prepare = [&, prepare = steps.prepare] {
      HostState h = prepare();
      if (meters != nullptr) before = meters->Read();
      if (s.storage != nullptr) device_before = s.storage->Stat();
      return h;
    };
  }
  std::vector<ReaderOutcome> outcomes = launcher.Launch(req, steps, interrupted);
  if (meters != nullptr) after = meters->Read();
  if (s.storage != nullptr) device_after = s.storage->Stat();
  host.CleanUp("loadbench");
  if (*interrupted) {
    for (const ReaderOutcome& o : outcomes) RemoveProfileData(o.profile_data);
    return Status::Ok();
  }
  // A model read through a server: the storage reads are the server's, not the readers' (their
  // own are their programs' code), so the read counters judge nothing.
  const bool remote = !file.read_as.empty() || IsRemote(file.path);
  const Judging judging = {&p, res.info, launcher.checks_warm_reads() && !remote,
                           launcher.checks_cold_reads() && !remote, launcher.in_process()};
  for (size_t k = 0; k < batch->size(); ++k) {
    RunRecord& r = (*batch)[k];
    r = Complete(r, judging, k, outcomes[k]);
    AddMetered(before, after, &r);
    AddDeviceFigures(device_before, device_after, &r);
    LB_RETURN_IF_ERROR(WriteTimeline(s.out_dir, outcomes[k], &r));
    if (launcher.in_process()) continue;  // a ceiling's read: no profile, none missing
    LB_RETURN_IF_ERROR(WriteProfile(s, launcher.unprofiled(k), outcomes[k], &r));
  }
  if (batch->size() > 1) SetStartSpread(batch);
  if (batch->size() > 1 && judging.check_cold_reads) CheckColdReadsTogether(p, batch);
  return Status::Ok();
}

}  // namespace

Status MeasureRun(const MeasureSettings& s, Reporter& out, const PreparedFile& file,
                  const RunPoint& p, bool* interrupted) {
  RunRecord base = BaseRecord(s, out, file, p);
  const Resolved res = Resolve(s, p);
  const std::unique_ptr<Launcher> launcher = LauncherFor(s, p, res);
  LaunchRequest req = RequestOf(s, file, p);
  if (p.exec) {
    base.command = req.argv;
  } else {
    base.params = res.params;
    base.use = res.use;
  }
  // A record per reader; a ceiling's read is one for its run.
  std::vector<RunRecord> batch(launcher->in_process() ? 1 : static_cast<size_t>(p.procs), base);
  for (size_t i = 0; i < batch.size(); ++i) batch[i].run_id = out.RunId(i);
  if (std::string why = NotOffered(p, res, *launcher, &req); !why.empty()) {
    for (RunRecord& r : batch) r.status = "unsupported", r.error = why;
    return out.Write(batch);
  }
  if (!p.failed.empty()) {
    for (RunRecord& r : batch) r.status = "failed", r.error = p.failed;
    return out.Write(batch);
  }
  LB_RETURN_IF_ERROR(PrepareProfiles(s, *launcher, &req));
  LB_RETURN_IF_ERROR(LaunchAndComplete(s, file, p, res, *launcher, req, &batch, interrupted));
  if (*interrupted) return Status::Ok();  // no record: the run did not finish
  return out.Write(batch);
}

}  // namespace loadbench
