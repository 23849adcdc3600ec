#include "harness/worker.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "loaders/checksum.h"
#include "loaders/file_io.h"
#include "loaders/format/format.h"
#include "loaders/loader.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One "Key: value" field of a /proc text file, as an integer; nullopt when absent.
std::optional<uint64_t> ProcField(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() &&
        line[key.size()] == ':') {
      return std::stoull(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

nlohmann::ordered_json OrNull(std::optional<uint64_t> v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
}

}  // namespace

nlohmann::ordered_json RunWorker(const WorkerRequest& req) {
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
  s = Params::Resolve(info->name, info->options, specs[0].options, &params);
  if (!s.ok()) return fail(s);
  if (std::string why = info->unsupported_reason(); !why.empty()) {
    return fail(Status::Unsupported(why));
  }
  std::unique_ptr<Loader> loader = info->make(params);

  // ---- the timed region: open and validate, load, consume ----
  // read_bytes is counted over the region only: after a cache drop, the worker's own start-up
  // pages in its executable and libraries, which is not the load's I/O.
  const auto read_bytes_start = ProcField("/proc/self/io", "read_bytes");
  const auto t0 = Clock::now();
  TensorTable table;
  {
    UniqueFd fd;
    s = OpenReadOnly(req.file, 0, &fd);
    if (s.ok()) s = ReadTensorTable(fd.get(), req.file, &table);
  }
  const auto t_open = Clock::now();
  if (!s.ok()) return fail(s);
  std::vector<TensorBytes> views;
  views.reserve(table.tensors.size());
  s = loader->Load(req.file, table, &views);
  const auto t_ready = Clock::now();
  r["details"] = loader->Details();
  if (!s.ok()) return fail(s);
  auto t_first = t_ready;
  const uint64_t checksum = ChecksumTensors(views, [&] { t_first = Clock::now(); });
  const auto t_done = Clock::now();
  // ---- end of the timed region ----

  // Read while the loader still holds its memory: VmHWM is a high-water mark anyway, but the
  // I/O counters should include nothing the teardown causes.
  const auto hwm_kib = ProcField("/proc/self/status", "VmHWM");
  const auto anon_huge_kib = ProcField("/proc/self/smaps_rollup", "AnonHugePages");
  const auto read_bytes_end = ProcField("/proc/self/io", "read_bytes");
  std::optional<uint64_t> read_bytes;
  if (read_bytes_start && read_bytes_end) read_bytes = *read_bytes_end - *read_bytes_start;

  r["format"] = table.format;
  r["tensor_count"] = table.tensors.size();
  r["tensor_bytes"] = table.tensor_bytes;
  r["checksum"] = fmt::format("{:016x}", checksum);
  if (table.expected_checksum) {
    const bool ok = checksum == *table.expected_checksum;
    r["checksum_ok"] = ok;
    if (ok) {
      r["status"] = "ok";
    } else {
      r["error"] = fmt::format("checksum mismatch: loaded bytes give {:016x}, file stores {:016x}",
                               checksum, *table.expected_checksum);
    }
  } else {
    // Nothing to compare against inside one run; the runner compares strategies.
    r["checksum_ok"] = nullptr;
    r["status"] = "ok";
  }
  r["open_s"] = Seconds(t0, t_open);
  r["ready_s"] = Seconds(t0, t_ready);
  r["wall_s"] = Seconds(t0, t_done);
  r["first_tensor_s"] =
      views.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(Seconds(t0, t_first));
  r["peak_rss_bytes"] = hwm_kib ? nlohmann::ordered_json(*hwm_kib * 1024) : nullptr;
  r["anon_huge_bytes"] = anon_huge_kib ? nlohmann::ordered_json(*anon_huge_kib * 1024) : nullptr;
  r["read_bytes"] = OrNull(read_bytes);
  r["params"] = params.ToJson();
  r["details"] = loader->Details();
  return r;
}

int WorkerMain(const WorkerRequest& req, int result_fd) {
  nlohmann::ordered_json r = RunWorker(req);
  const std::string line =
      r.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (!WriteExact(result_fd, "result pipe", line.data(), line.size()).ok()) return 1;
  return 0;
}

}  // namespace loadbench
