#include "harness/record/record.h"

#include <time.h>

#include <ctime>
#include <set>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// When a field is written: always (null when unset), only when set, or only on the wire.
enum class Key { kAlways, kWhenSet, kWire };

// The one list of fields, in the documented order. `visit(name, field, when)` is called for
// each; the same list writes records, writes and reads the wire, and names the keys.
template <typename Memory, typename Visit>
void VisitMemory(Memory& m, Visit&& v) {
  v("rss_bytes", m.rss_bytes, Key::kAlways);
  v("rss_anon_bytes", m.rss_anon_bytes, Key::kAlways);
  v("rss_file_bytes", m.rss_file_bytes, Key::kAlways);
  v("rss_shmem_bytes", m.rss_shmem_bytes, Key::kAlways);
  v("pss_bytes", m.pss_bytes, Key::kAlways);
  v("pss_anon_bytes", m.pss_anon_bytes, Key::kAlways);
  v("pss_file_bytes", m.pss_file_bytes, Key::kAlways);
  v("pss_shmem_bytes", m.pss_shmem_bytes, Key::kAlways);
  v("shared_clean_bytes", m.shared_clean_bytes, Key::kAlways);
  v("shared_dirty_bytes", m.shared_dirty_bytes, Key::kAlways);
  v("private_clean_bytes", m.private_clean_bytes, Key::kAlways);
  v("private_dirty_bytes", m.private_dirty_bytes, Key::kAlways);
  v("file_cache_growth_bytes", m.file_cache_growth_bytes, Key::kAlways);
  v("page_cache_growth_bytes", m.page_cache_growth_bytes, Key::kAlways);
  v("cgroup_peak_bytes", m.cgroup_peak_bytes, Key::kWhenSet);
  v("cgroup_oom_kills", m.cgroup_oom_kills, Key::kWhenSet);
}

template <typename Record, typename Visit>
void VisitIdentity(Record& r, Visit&& v) {
  v("run_id", r.run_id, Key::kAlways);
  v("experiment", r.experiment, Key::kAlways);
  v("strategy", r.strategy, Key::kAlways);
  v("strategy_spec", r.strategy_spec, Key::kAlways);
  v("strategy_flags", r.strategy_flags, Key::kWhenSet);
  v("params", r.params, Key::kAlways);
  v("use", r.use, Key::kAlways);
  v("label", r.label, Key::kWhenSet);
  v("command", r.command, Key::kWhenSet);
  v("file", r.file, Key::kAlways);
  v("format", r.format, Key::kAlways);
  v("file_bytes", r.file_bytes, Key::kAlways);
  v("shards", r.shards, Key::kWhenSet);
  v("read_as", r.read_as, Key::kWhenSet);
  v("cache", r.cache, Key::kAlways);
  v("rep", r.rep, Key::kAlways);
  v("position", r.position, Key::kWhenSet);
  v("after", r.after, Key::kWhenSet);
  v("procs", r.procs, Key::kWhenSet);
  v("proc", r.proc, Key::kWhenSet);
  v("pattern", r.pattern, Key::kWhenSet);
  v("host", r.host, Key::kWhenSet);
  v("rank", r.rank, Key::kWhenSet);
  v("ranks", r.ranks, Key::kWhenSet);
  v("cache_by_rank", r.cache_by_rank, Key::kWhenSet);
  v("memory_limit_bytes", r.memory_limit_bytes, Key::kWhenSet);
  v("link", r.link, Key::kWhenSet);
  v("nodes", r.nodes, Key::kWhenSet);
  v("session", r.session, Key::kWhenSet);
  v("nic", r.nic, Key::kWhenSet);
  v("uplink", r.uplink, Key::kWhenSet);
  v("storage", r.storage, Key::kWhenSet);
  v("started_at", r.started_at, Key::kAlways);
  v("ended_at", r.ended_at, Key::kAlways);
  v("status", r.status, Key::kAlways);
  v("error", r.error, Key::kAlways);
  v("checksum_ok", r.checksum_ok, Key::kAlways);
  v("checksum", r.checksum, Key::kAlways);
  v("verify", r.verify, Key::kAlways);
  v("drop_method", r.drop_method, Key::kWhenSet);
  v("warm_reads", r.warm_reads, Key::kWhenSet);
  v("oom_killed", r.oom_killed, Key::kWhenSet);
  v("warnings", r.warnings, Key::kWhenSet);
}

template <typename Record, typename Visit>
void VisitMeasures(Record& r, Visit&& v) {
  v("wall_s", r.wall_s, Key::kAlways);
  v("ready_s", r.ready_s, Key::kAlways);
  v("first_use_s", r.first_use_s, Key::kAlways);
  v("open_s", r.open_s, Key::kAlways);
  v("transform_s", r.transform_s, Key::kAlways);
  v("bind_s", r.bind_s, Key::kAlways);
  v("consume_s", r.consume_s, Key::kAlways);
  v("verify_s", r.verify_s, Key::kAlways);
  v("teardown_s", r.teardown_s, Key::kAlways);
  v("process_s", r.process_s, Key::kAlways);
  v("user_s", r.user_s, Key::kAlways);
  v("sys_s", r.sys_s, Key::kAlways);
  v("load_user_s", r.load_user_s, Key::kAlways);
  v("load_sys_s", r.load_sys_s, Key::kAlways);
  v("load_start_unix_s", r.load_start_unix_s, Key::kAlways);
  v("start_spread_s", r.start_spread_s, Key::kWhenSet);
  v("peak_rss_bytes", r.peak_rss_bytes, Key::kAlways);
  v("start_rss_bytes", r.start_rss_bytes, Key::kAlways);
  v("anon_huge_bytes", r.anon_huge_bytes, Key::kAlways);
  v("major_faults", r.major_faults, Key::kAlways);
  v("minor_faults", r.minor_faults, Key::kAlways);
  v("load_major_faults", r.load_major_faults, Key::kAlways);
  v("load_minor_faults", r.load_minor_faults, Key::kAlways);
  v("read_bytes", r.read_bytes, Key::kAlways);
  v("resident_before", r.resident_before, Key::kAlways);
  v("resident_after", r.resident_after, Key::kAlways);
  v("server_resident_before", r.server_resident_before, Key::kWhenSet);
  v("server_cpu_s", r.server_cpu_s, Key::kWhenSet);
  v("mount_cpu_s", r.mount_cpu_s, Key::kWhenSet);
  v("link_rx_bytes", r.link_rx_bytes, Key::kWhenSet);
  v("needed_bytes", r.needed_bytes, Key::kWhenSet);
  v("nic_rx_bytes", r.nic_rx_bytes, Key::kWhenSet);
  v("nic_tx_bytes", r.nic_tx_bytes, Key::kWhenSet);
  v("device_reads", r.device_reads, Key::kWhenSet);
  v("device_read_bytes", r.device_read_bytes, Key::kWhenSet);
  v("device_read_merges", r.device_read_merges, Key::kWhenSet);
  v("device_read_ms", r.device_read_ms, Key::kWhenSet);
  v("device_queue_ms", r.device_queue_ms, Key::kWhenSet);
  v("device_request_bytes", r.device_request_bytes, Key::kWhenSet);
  v("device_reads_per_s", r.device_reads_per_s, Key::kWhenSet);
  v("worst_shard_resident", r.worst_shard_resident, Key::kWhenSet);
  v("memory", r.memory, Key::kAlways);
  v("counters", r.counters, Key::kAlways);
  v("counters_scaled", r.counters_scaled, Key::kWhenSet);
  v("timeline", r.timeline, Key::kAlways);
  v("profile", r.profile, Key::kWhenSet);
  v("profile_error", r.profile_error, Key::kWhenSet);
}

template <typename Record, typename Visit>
void VisitLoad(Record& r, Visit&& v) {
  v("tensor_count", r.tensor_count, Key::kAlways);
  v("tensor_bytes", r.tensor_bytes, Key::kAlways);
  v("consume_result", r.consume_result, Key::kAlways);
  v("unaligned_tensors", r.unaligned_tensors, Key::kAlways);
  v("untyped_tensors", r.untyped_tensors, Key::kAlways);
  v("aligned_copy_bytes", r.aligned_copy_bytes, Key::kAlways);
  v("transformed_bytes", r.transformed_bytes, Key::kAlways);
  v("loads", r.loads, Key::kAlways);
  v("details", r.details, Key::kAlways);
  v("device", r.device, Key::kWhenSet);
  v("exec", r.exec, Key::kWhenSet);
  v("ceiling_bytes", r.ceiling_bytes, Key::kWhenSet);
  v("gb_per_s", r.gb_per_s, Key::kWhenSet);
  v("settle_s", r.settle_s, Key::kWhenSet);
  v("ceiling_recipes", r.ceiling_recipes, Key::kWhenSet);
  v("load_start_mono_s", r.load_start_mono_s, Key::kWire);
  v("profile_window_mono_s", r.profile_window_mono_s, Key::kWire);
}

template <typename Record, typename Visit>
void VisitRecord(Record& r, Visit&& v) {
  VisitIdentity(r, v);
  VisitMeasures(r, v);
  VisitLoad(r, v);
}

// Whether a field holds a value, and the value as JSON.
template <typename T>
bool IsSet(const std::optional<T>& v) {
  return v.has_value();
}
inline bool IsSet(const Json& v) { return !v.is_null(); }
inline bool IsSet(const std::vector<std::string>& v) { return !v.empty(); }
template <typename T>
bool IsSet(const T&) {
  return true;
}

Json ToJson(const MemoryFigures& m, bool all);
template <typename T>
Json ToJson(const std::optional<T>& v, bool) {
  return v ? Json(*v) : Json();
}
template <typename T>
Json ToJson(const T& v, bool) {
  return Json(v);
}

Json ToJson(const MemoryFigures& m, bool all) {
  Json j = Json::object();
  VisitMemory(m, [&](const char* key, const auto& field, Key when) {
    if (all || when == Key::kAlways || IsSet(field)) j[key] = ToJson(field, all);
  });
  return j;
}

// Reads a field of the wire; null leaves it unset. Throws on a wrong type.
template <typename T>
void FromJson(const Json& j, std::optional<T>* out) {
  if (j.is_null()) return;
  *out = j.get<T>();
}
inline void FromJson(const Json& j, Json* out) { *out = j; }
void FromJson(const Json& j, MemoryFigures* out) {
  if (!j.is_object()) return;
  VisitMemory(*out, [&](const char* key, auto& field, Key) {
    if (const auto it = j.find(key); it != j.end()) FromJson(*it, &field);
  });
}
template <typename T>
void FromJson(const Json& j, T* out) {
  if (!j.is_null()) *out = j.get<T>();
}

}  // namespace

void SetProcessUsage(const rusage& usage, RunRecord* r) {
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  r->user_s = secs(usage.ru_utime);
  r->sys_s = secs(usage.ru_stime);
  r->major_faults = static_cast<uint64_t>(usage.ru_majflt);
  r->minor_faults = static_cast<uint64_t>(usage.ru_minflt);
}

Json RecordJson(const RunRecord& r) {
  Json j = Json::object();
  VisitRecord(r, [&](const char* key, const auto& field, Key when) {
    if (when == Key::kWire || (when == Key::kWhenSet && !IsSet(field))) return;
    j[key] = ToJson(field, /*all=*/false);
  });
  return j;
}

Json WireJson(const RunRecord& r) {
  Json j = Json::object();
  VisitRecord(r, [&](const char* key, const auto& field, Key) {
    j[key] = ToJson(field, /*all=*/true);
  });
  return j;
}

Status FromWireJson(const Json& j, RunRecord* out) {
  if (!j.is_object()) return Status::Failed("the worker's result is not a JSON object");
  RunRecord r;
  try {
    VisitRecord(r, [&](const char* key, auto& field, Key) {
      if (const auto it = j.find(key); it != j.end()) FromJson(*it, &field);
    });
  } catch (const nlohmann::json::exception& e) {
    return Status::Failed(fmt::format("the worker's result is malformed: {}", e.what()));
  }
  *out = std::move(r);
  return Status::Ok();
}

std::vector<std::string> RecordKeys() {
  std::vector<std::string> keys;
  RunRecord r;
  VisitRecord(r, [&](const char* key, const auto& field, Key when) {
    if (when == Key::kWire) return;
    keys.emplace_back(key);
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, MemoryFigures>) {
      VisitMemory(field, [&](const char* inner, const auto&, Key) {
        keys.push_back(fmt::format("{}.{}", key, inner));
      });
    }
  });
  return keys;
}

void CopyIdentity(const RunRecord& from, RunRecord* to) {
  static const std::set<std::string_view> kReaders = {"proc",       "host",          "rank",
                                                      "ranks",      "cache_by_rank", "ended_at",
                                                      "status",     "error",         "checksum_ok",
                                                      "checksum",   "verify",        "drop_method",
                                                      "warm_reads", "oom_killed",    "warnings"};
  Json runner = Json::object();
  VisitIdentity(from, [&](const char* key, const auto& field, Key) {
    runner[key] = ToJson(field, /*all=*/true);
  });
  VisitIdentity(*to, [&](const char* key, auto& field, Key) {
    using T = std::decay_t<decltype(field)>;
    if (kReaders.contains(key)) return;
    if constexpr (std::is_same_v<T, Json>) {
      if (!field.is_null() && !field.empty()) return;  // params, use: as the reader resolved them
    }
    field = T{};
    FromJson(runner[key], &field);
  });
}

int CountBad(const std::vector<RunRecord>& records) {
  int bad = 0;
  for (const auto& r : records) {
    if (r.status == "failed" || r.status == "invalid") ++bad;
  }
  return bad;
}

std::string NowStamp(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string NowUtcMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  ::gmtime_r(&ts.tv_sec, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, ts.tv_nsec / 1000000);
}

}  // namespace loadbench
