#include "harness/launch/worker.h"

#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "harness/machine/counters.h"
#include "harness/profile/profile.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"
#include "loaders/cuda/gpu.h"
#include "loaders/format/model.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/part.h"
#include "loaders/use/pipeline.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The process's memory at the end of the load, in bytes: RSS split by kind (status), and the
// proportional and shared/private view (smaps_rollup) that tells what several processes
// loading the same file really cost together.
void MemoryNow(MemoryFigures* m) {
  const auto status = ReadProcFields("/proc/self/status");
  const auto rollup = ReadProcFields("/proc/self/smaps_rollup");
  auto get = [](const std::map<std::string, uint64_t>& from, const char* key) {
    const auto it = from.find(key);
    return it == from.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  };
  m->rss_bytes = get(status, "VmRSS");
  m->rss_anon_bytes = get(status, "RssAnon");
  m->rss_file_bytes = get(status, "RssFile");
  m->rss_shmem_bytes = get(status, "RssShmem");
  m->pss_bytes = get(rollup, "Pss");
  m->pss_anon_bytes = get(rollup, "Pss_Anon");
  m->pss_file_bytes = get(rollup, "Pss_File");
  m->pss_shmem_bytes = get(rollup, "Pss_Shmem");
  m->shared_clean_bytes = get(rollup, "Shared_Clean");
  m->shared_dirty_bytes = get(rollup, "Shared_Dirty");
  m->private_clean_bytes = get(rollup, "Private_Clean");
  m->private_dirty_bytes = get(rollup, "Private_Dirty");
}

double MonotonicSeconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// CLOCK_REALTIME now, to the microsecond: comparable between hosts whose clocks agree.
double UnixSecondsNow() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec * 1000000 + ts.tv_nsec / 1000) / 1e6;
}

// Tells the runner the load reached `stage` ("loaded", "measured") and waits for its word: a
// byte to go on after "loaded", EOF after "measured". Workers loading at once so measure their
// memory while all of them hold it, and none unmaps before every one has measured (a worker
// unmapping early would make shared pages look private to the others).
void Hold(int result_fd, int hold_fd, std::string_view stage) {
  const std::string line = std::string(stage) + "\n";
  if (!WriteExact(result_fd, "result pipe", line.data(), line.size()).ok()) return;
  char c;
  ssize_t n;
  while ((n = ::read(hold_fd, &c, 1)) < 0 && errno == EINTR) {
  }
}

// The start barrier (WorkerRequest::start_fd). A profiled worker turns perf on first and waits
// for its ack (*profiled: perf answered), so that no reader waits for its profiler once
// released; it is off CPU while it waits at the barrier, and its profile keeps only the samples
// of its load's own time anyway (ProfileWindow). Then "ready", and the runner's word to start.
Status AwaitStart(const WorkerRequest& req, int result_fd, bool* profiled) {
  *profiled =
      req.profile_ctl_fd >= 0 && ProfileControl(req.profile_ctl_fd, req.profile_ack_fd, "enable");
  if (req.start_fd < 0) return Status::Ok();
  LB_RETURN_IF_ERROR(WriteExact(result_fd, "result pipe", "ready\n", 6));
  char c;
  ssize_t n;
  while ((n = ::read(req.start_fd, &c, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) return Status::Failed("the runner gave up on the run before its readers started");
  return Status::Ok();
}

// The record of a load that did not happen or did not finish.
RunRecord Unfinished(RunRecord r, const Status& s) {
  r.status = s.code() == Status::Code::kUnsupported ? "unsupported" : "failed";
  r.error = s.message();
  return r;
}

// Before the timed region: whether the strategy can run here, the counters, and a device
// strategy's GPU context.
struct Setup {
  CounterSet counters;
  std::optional<double> context_s;
};

Status SetUp(const WorkerRequest& req, Setup* s, RunRecord* r) {
  const StrategyInfo* info = req.strategy.info;
  if (info == nullptr) return Status::BadInput("worker: the request names no strategy");
  r->params = req.strategy.params.ToJson();
  r->use = req.strategy.use.ToJson();
  if (std::string why = info->unsupported_reason(); !why.empty()) {
    return Status::Unsupported(why);
  }
  if (std::string why = FileKindMismatch(*info, req.file); !why.empty()) {
    return Status::Unsupported(why);
  }
  LB_RETURN_IF_ERROR(s->counters.Open(req.counters));
  if (info->flags & kDevice) {
    double secs = 0;
    LB_RETURN_IF_ERROR(gpu::Warm(&secs));
    s->context_s = secs;
  }
  return Status::Ok();
}

// The model this worker read against the one the runner prepared: a checksum stored in it other
// than the one the runner read (req.expect_checksum) is another model, changed or replaced in
// between (a remote object, most likely), however consistent in itself.
Status SameModel(const WorkerRequest& req, const TensorTable& table) {
  if (req.parts > 1 || !req.expect_checksum || !table.expected_checksum ||
      *table.expected_checksum == *req.expect_checksum) {
    return Status::Ok();  // a part's checksum is the part's, not the model's
  }
  return Status::Failed(fmt::format(
      "{}: the model stores checksum {:016x} now, {:016x} when the runner read it: it changed in "
      "between",
      req.file, *table.expected_checksum, *req.expect_checksum));
}

// The checksum the loaded bytes gave against what they must give: what the runner read (stored
// in the file, or its reference read), else, run on its own, what the file stores. Sets status,
// error, checksum and checksum_ok.
void Judge(const WorkerRequest& req, const TensorTable& table,
           const std::vector<uint64_t>& checksums, RunRecord* r) {
  const std::optional<uint64_t> expected =
      req.expect_checksum ? req.expect_checksum : table.expected_checksum;
  // The first that does not match, if any: the one an error should name.
  uint64_t checksum = checksums.empty() ? 0 : checksums.front();
  for (uint64_t c : checksums) {
    if (expected && c != *expected) {
      checksum = c;
      break;
    }
  }
  r->checksum = fmt::format("{:016x}", checksum);
  if (!expected) {
    // Run on its own (no runner), on a file that stores no checksum: nothing to compare with.
    r->status = "ok";
    return;
  }
  bool ok = !checksums.empty();
  for (uint64_t c : checksums) ok = ok && c == *expected;
  r->checksum_ok = ok;
  if (ok) {
    r->status = "ok";
    return;
  }
  r->error =
      fmt::format("checksum mismatch: loaded bytes give {:016x}, {} {:016x}", checksum,
                  table.expected_checksum ? "file stores" : "the reference read of the file gives",
                  *expected);
}

// A remote load some of whose answers were not checked against the object's ETag (its details,
// or a shard's, say etag_checked false; loaders/remote/http.h): a change of the object during the
// load would have gone unseen, which the run's line says, and why.
void EtagWarning(const std::string& file, const RunRecord::Json& details,
                 std::vector<std::string>* warnings) {
  std::vector<RunRecord::Json> all = {details};
  if (details.is_object() && details.contains("shards") && details["shards"].is_array()) {
    for (const RunRecord::Json& d : details["shards"]) all.push_back(d);
  }
  for (const RunRecord::Json& d : all) {
    if (d.is_object() && d.value("etag_checked", true) == false) {
      warnings->push_back(fmt::format("{}: not checked for a change during the load ({})", file,
                                      d.value("etag_unchecked", "unknown why")));
      return;
    }
  }
}

// The CPU time and faults of the timed region alone: a worker's whole-process figures (wait4)
// also hold exec, dynamic loading and teardown.
void LoadUsage(const rusage& start, const rusage& end, RunRecord* r) {
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  r->load_user_s = secs(end.ru_utime) - secs(start.ru_utime);
  r->load_sys_s = secs(end.ru_stime) - secs(start.ru_stime);
  r->load_major_faults = static_cast<uint64_t>(end.ru_majflt - start.ru_majflt);
  r->load_minor_faults = static_cast<uint64_t>(end.ru_minflt - start.ru_minflt);
}

// What the pipeline timed and counted, relative to the start of the timed region.
void PipelineFigures(const UsePipeline& p, Clock::time_point t0, RunRecord* r) {
  r->ready_s = Seconds(t0, p.ready());
  r->wall_s = Seconds(t0, p.done()) - p.kept_out_s();
  if (p.first_use()) r->first_use_s = Seconds(t0, *p.first_use());
  r->transform_s = p.transform_s();
  r->bind_s = p.bind_s();
  r->consume_s = p.consume_s();
  r->verify_s = p.verify_s();
  r->consume_result = fmt::format("{:016x}", p.consume_result());
  r->unaligned_tensors = p.stats().unaligned_tensors;
  r->untyped_tensors = p.stats().untyped_tensors;
  r->aligned_copy_bytes = p.stats().aligned_copies;
  r->transformed_bytes = p.transformed_bytes();
  r->loads = p.loads();
}

// The profile's window (profile.h): the load's own time (`timed`, what wall_s adds up) while perf
// was on, which it was from before the start (AwaitStart) until `off`, in CLOCK_MONOTONIC
// seconds.
RunRecord::Json ProfileWindow(const std::vector<TimeSpan>& timed, Clock::time_point off) {
  RunRecord::Json spans = RunRecord::Json::array();
  for (const TimeSpan& t : timed) {
    const Clock::time_point end = std::min(t.end, off);
    if (end > t.begin) spans.push_back({MonotonicSeconds(t.begin), MonotonicSeconds(end)});
  }
  return spans;
}

// One of several readers keeps its part of the model (inside the timed region: a rank works
// out its slices as it opens the model), and the whole model's table goes in *place, for a
// strategy whose readers work together (Loader::SetPart). Replicated readers load the whole
// model as it is. A part in one file of a sharded model is loaded from that file (*path).
Status TakePart(const WorkerRequest& req, TensorTable* table, std::string* path,
                std::optional<PartPlace>* place) {
  if (req.pattern.kind == ReadPattern::Kind::kReplicated) return Status::Ok();
  TensorTable part;
  LB_RETURN_IF_ERROR(PartOf(req.file, *table, req.pattern, req.part, req.parts, &part));
  if (table->sharded() && part.shards.size() == 1) *path = part.shards[0].path;
  *place = PartPlace{std::make_shared<const TensorTable>(std::move(*table)), req.pattern.Text(),
                     req.part, req.parts};
  *table = std::move(part);
  return Status::Ok();
}

}  // namespace

RunRecord RunWorker(const WorkerRequest& req) {
  const int result_fd = req.result_fd;
  RunRecord r;
  Setup setup;
  if (Status s = SetUp(req, &setup, &r); !s.ok()) return Unfinished(r, s);
  bool profiled = false;
  if (Status s = AwaitStart(req, result_fd, &profiled); !s.ok()) return Unfinished(r, s);

  // ---- the timed region: open and validate, load, transform, bind, consume ----
  // read_bytes is counted over the region only: after a cache drop, the worker's own start-up
  // pages in its executable and libraries, which is not the load's I/O.
  const auto read_bytes_start = ProcField("/proc/self/io", "read_bytes");
  // What the process held before the load (binary, libraries, heap): peak RSS minus this is
  // what the load itself added.
  r.start_rss_bytes = ProcField("/proc/self/status", "VmRSS");
  rusage usage_start{};
  ::getrusage(RUSAGE_SELF, &usage_start);  // every thread, so pread_mt's too
  setup.counters.Enable();
  const auto t0 = Clock::now();
  r.load_start_unix_s = UnixSecondsNow();
  r.load_start_mono_s = MonotonicSeconds(t0);
  TensorTable table;
  Status s;
  std::string path = req.file;
  s = ReadModel(req.file, &table);
  if (s.ok()) s = SameModel(req, table);
  std::optional<PartPlace> place;
  if (s.ok() && req.parts > 1) s = TakePart(req, &table, &path, &place);
  r.open_s = Seconds(t0, Clock::now());
  if (!s.ok()) return Unfinished(r, s);
  r.needed_bytes = table.tensor_bytes;  // its part's, or the whole model's
  UsePipeline pipeline(*req.strategy.info, req.strategy.params, req.strategy.use, path, table);
  if (place) pipeline.SetPart(std::move(*place));
  if (s = pipeline.Check(); !s.ok()) return Unfinished(r, s);
  s = pipeline.Run();
  const auto profile_off = Clock::now();
  if (req.profile_ctl_fd >= 0) ProfileControl(req.profile_ctl_fd, req.profile_ack_fd, "disable");
  setup.counters.Disable();
  rusage usage_end{};
  ::getrusage(RUSAGE_SELF, &usage_end);
  LoadUsage(usage_start, usage_end, &r);
  r.details = pipeline.Details();
  if (!s.ok()) return Unfinished(r, s);
  EtagWarning(req.file, r.details, &r.warnings);
  // ---- end of the timed region ----
  // Read while the loader still holds its memory: the I/O counters should include nothing the
  // teardown causes, and the memory figures describe the loaded state.
  const auto read_bytes_end = ProcField("/proc/self/io", "read_bytes");
  if (req.hold_fd >= 0) Hold(result_fd, req.hold_fd, "loaded");
  r.peak_rss_bytes = ProcField("/proc/self/status", "VmHWM");
  r.anon_huge_bytes = ProcField("/proc/self/smaps_rollup", "AnonHugePages");
  MemoryNow(&r.memory);
  if (req.hold_fd >= 0) Hold(result_fd, req.hold_fd, "measured");
  if (read_bytes_start && read_bytes_end) r.read_bytes = *read_bytes_end - *read_bytes_start;
  // After the memory figures: a verification pass must not change them.
  std::vector<uint64_t> checksums;
  std::string verify;
  pipeline.Verify(&checksums, &verify);
  r.format = table.format;
  r.tensor_count = table.tensors.size();
  r.tensor_bytes = table.tensor_bytes;
  r.verify = verify;
  Judge(req, table, checksums, &r);
  PipelineFigures(pipeline, t0, &r);
  if (profiled) {
    r.profile_window_mono_s = ProfileWindow(pipeline.Timed(t0), profile_off);
  }
  if (req.strategy.info->flags & kDevice) {
    r.device = pipeline.DeviceJson(t0);
    // Before the timed region, not in wall_s.
    r.device["context_s"] = setup.context_s ? RunRecord::Json(*setup.context_s) : nullptr;
  }
  std::vector<std::string> scaled;
  r.counters = setup.counters.Read(&scaled);
  r.counters_scaled = scaled;
  r.teardown_s = pipeline.Release();
  return r;
}

int WorkerMain(const WorkerRequest& req) {
  // A profiler that is gone makes its control pipe's write fail with EPIPE, not kill the load.
  if (req.profile_ctl_fd >= 0) ::signal(SIGPIPE, SIG_IGN);
  const RunRecord r = RunWorker(req);
  const std::string line =
      WireJson(r).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (!WriteExact(req.result_fd, "result pipe", line.data(), line.size()).ok()) return 1;
  return 0;
}

}  // namespace loadbench
