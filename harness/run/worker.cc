#include "harness/run/worker.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "harness/system/counters.h"
#include "loaders/use/pipeline.h"
#include "loaders/base/file_io.h"
#include "loaders/format/format.h"
#include "loaders/cuda/gpu.h"
#include "loaders/loader.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Every "Key: value" field of a /proc text file, as integers (kB fields stay in kB).
std::map<std::string, uint64_t> ProcFields(const char* file) {
  std::map<std::string, uint64_t> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const char* v = line.c_str() + colon + 1;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (end != v) out[line.substr(0, colon)] = n;
  }
  return out;
}

std::optional<uint64_t> ProcField(const char* file, const std::string& key) {
  const auto fields = ProcFields(file);
  const auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

template <typename T>
nlohmann::ordered_json OrNull(std::optional<T> v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
}

// The process's memory at the end of the load, in bytes: RSS split by kind (status), and the
// proportional and shared/private view (smaps_rollup) that tells what several processes
// loading the same file really cost together.
nlohmann::ordered_json MemoryNow() {
  const auto status = ProcFields("/proc/self/status");
  const auto rollup = ProcFields("/proc/self/smaps_rollup");
  nlohmann::ordered_json m;
  auto put = [&m](const std::map<std::string, uint64_t>& from, const char* key, const char* name) {
    const auto it = from.find(key);
    m[name] = it == from.end() ? nlohmann::ordered_json() : nlohmann::ordered_json(it->second * 1024);
  };
  put(status, "VmRSS", "rss_bytes");
  put(status, "RssAnon", "rss_anon_bytes");
  put(status, "RssFile", "rss_file_bytes");
  put(status, "RssShmem", "rss_shmem_bytes");
  put(rollup, "Pss", "pss_bytes");
  put(rollup, "Pss_Anon", "pss_anon_bytes");
  put(rollup, "Pss_File", "pss_file_bytes");
  put(rollup, "Pss_Shmem", "pss_shmem_bytes");
  put(rollup, "Shared_Clean", "shared_clean_bytes");
  put(rollup, "Shared_Dirty", "shared_dirty_bytes");
  put(rollup, "Private_Clean", "private_clean_bytes");
  put(rollup, "Private_Dirty", "private_dirty_bytes");
  return m;
}

double MonotonicSeconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
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

}  // namespace

nlohmann::ordered_json RunWorker(const WorkerRequest& req, int result_fd) {
  nlohmann::ordered_json r;
  r["status"] = "failed";
  r["error"] = nullptr;
  auto fail = [&](const Status& s) {
    r["status"] = s.code() == Status::Code::kUnsupported ? "unsupported" : "failed";
    r["error"] = s.message();
    return r;
  };

  std::vector<StrategySpec> specs;
  Status s = ParseStrategyList(req.strategy, &specs);
  if (!s.ok()) return fail(s);
  if (specs.size() != 1) return fail(Status::BadInput("worker: exactly one strategy expected"));
  const StrategyInfo* info = FindStrategy(specs[0].name);
  Params params;
  UseOptions use;
  s = ResolveSpec(*info, specs[0], &params, &use);
  if (!s.ok()) return fail(s);
  r["params"] = params.ToJson();
  r["use"] = use.ToJson();
  if (std::string why = info->unsupported_reason(); !why.empty()) {
    return fail(Status::Unsupported(why));
  }
  CounterSet counters;
  s = counters.Open(req.counters);
  if (!s.ok()) return fail(s);
  std::optional<double> context_s;
  if (info->flags & kDevice) {
    double secs = 0;
    s = gpu::Warm(&secs);
    if (!s.ok()) return fail(s);
    context_s = secs;
  }

  // ---- the timed region: open and validate, load, transform, bind, consume ----
  // read_bytes is counted over the region only: after a cache drop, the worker's own start-up
  // pages in its executable and libraries, which is not the load's I/O.
  const auto read_bytes_start = ProcField("/proc/self/io", "read_bytes");
  // What the process held before the load (binary, libraries, heap): peak RSS minus this is
  // what the load itself added.
  const auto start_rss_kib = ProcField("/proc/self/status", "VmRSS");
  counters.Enable();
  const auto t0 = Clock::now();
  TensorTable table;
  {
    UniqueFd fd;
    s = OpenReadOnly(req.file, 0, &fd);
    if (s.ok()) s = ReadTensorTable(fd.get(), req.file, &table);
  }
  const auto t_open = Clock::now();
  if (!s.ok()) return fail(s);
  UsePipeline pipeline(*info, params, use, req.file, table);
  s = pipeline.Check();
  if (!s.ok()) return fail(s);
  s = pipeline.Run();
  r["load_start_mono_s"] = MonotonicSeconds(t0);
  r["details"] = pipeline.Details();
  if (!s.ok()) {
    counters.Disable();
    return fail(s);
  }
  counters.Disable();
  // ---- end of the timed region ----
  // Read while the loader still holds its memory: the I/O counters should include nothing the
  // teardown causes, and the memory figures describe the loaded state.
  const auto read_bytes_end = ProcField("/proc/self/io", "read_bytes");
  if (req.hold_fd >= 0) Hold(result_fd, req.hold_fd, "loaded");
  const auto hwm_kib = ProcField("/proc/self/status", "VmHWM");
  const auto anon_huge_kib = ProcField("/proc/self/smaps_rollup", "AnonHugePages");
  nlohmann::ordered_json memory = MemoryNow();
  if (req.hold_fd >= 0) Hold(result_fd, req.hold_fd, "measured");
  std::optional<uint64_t> read_bytes;
  if (read_bytes_start && read_bytes_end) read_bytes = *read_bytes_end - *read_bytes_start;
  // After the memory figures: a verification pass must not change them.
  std::vector<uint64_t> checksums;
  std::string verify;
  pipeline.Verify(&checksums, &verify);
  // What the bytes must hash to: what the file stores, else the runner's reference read.
  const std::optional<uint64_t> expected =
      table.expected_checksum ? table.expected_checksum : req.expect_checksum;
  // The first that does not match, if any: the one an error should name.
  uint64_t checksum = checksums.empty() ? 0 : checksums.front();
  for (uint64_t c : checksums) {
    if (expected && c != *expected) {
      checksum = c;
      break;
    }
  }

  r["format"] = table.format;
  r["tensor_count"] = table.tensors.size();
  r["tensor_bytes"] = table.tensor_bytes;
  r["checksum"] = fmt::format("{:016x}", checksum);
  r["verify"] = verify;
  if (expected) {
    bool ok = !checksums.empty();
    for (uint64_t c : checksums) ok = ok && c == *expected;
    r["checksum_ok"] = ok;
    if (ok) {
      r["status"] = "ok";
    } else {
      r["error"] = fmt::format("checksum mismatch: loaded bytes give {:016x}, {} {:016x}",
                               checksum,
                               table.expected_checksum ? "file stores"
                                                       : "the reference read of the file gives",
                               *expected);
    }
  } else {
    // Run on its own (no runner), on a file that stores no checksum: nothing to compare with.
    r["checksum_ok"] = nullptr;
    r["status"] = "ok";
  }
  r["open_s"] = Seconds(t0, t_open);
  r["ready_s"] = Seconds(t0, pipeline.ready());
  r["wall_s"] = Seconds(t0, pipeline.done());
  r["first_use_s"] =
      OrNull(pipeline.first_use() ? std::optional<double>(Seconds(t0, *pipeline.first_use()))
                                  : std::nullopt);
  r["transform_s"] = OrNull(pipeline.transform_s());
  r["bind_s"] = OrNull(pipeline.bind_s());
  r["consume_s"] = pipeline.consume_s();
  r["verify_s"] = OrNull(pipeline.verify_s());
  r["consume_result"] = fmt::format("{:016x}", pipeline.consume_result());
  r["unaligned_tensors"] = pipeline.stats().unaligned_tensors;
  r["untyped_tensors"] = pipeline.stats().untyped_tensors;
  r["aligned_copy_bytes"] = pipeline.stats().aligned_copies;
  r["transformed_bytes"] = pipeline.transformed_bytes();
  r["loads"] = pipeline.loads();
  if (info->flags & kDevice) {
    r["device"] = pipeline.DeviceJson(t0);
    r["device"]["context_s"] = OrNull(context_s);  // before the timed region, not in wall_s
  }
  r["peak_rss_bytes"] = hwm_kib ? nlohmann::ordered_json(*hwm_kib * 1024) : nullptr;
  r["start_rss_bytes"] = start_rss_kib ? nlohmann::ordered_json(*start_rss_kib * 1024) : nullptr;
  r["anon_huge_bytes"] = anon_huge_kib ? nlohmann::ordered_json(*anon_huge_kib * 1024) : nullptr;
  r["memory"] = std::move(memory);
  std::vector<std::string> scaled;
  r["counters"] = counters.Read(&scaled);
  if (!scaled.empty()) r["counters_scaled"] = scaled;
  r["read_bytes"] = OrNull(read_bytes);
  return r;
}

int WorkerMain(const WorkerRequest& req, int result_fd) {
  nlohmann::ordered_json r = RunWorker(req, result_fd);
  const std::string line =
      r.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (!WriteExact(result_fd, "result pipe", line.data(), line.size()).ok()) return 1;
  return 0;
}

}  // namespace loadbench
