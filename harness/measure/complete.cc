#include "harness/measure/complete.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

// Why a process killed by `signal` died, when it was the OOM killer (SIGKILL with the OOM
// killer's count up over the run); else nullopt.
std::optional<std::string> OomKilled(const RunPoint& p, int signal, const HostState& h) {
  if (signal != SIGKILL || h.oom_kills.value_or(0) == 0) return std::nullopt;
  return p.memory_limit > 0
             ? fmt::format("killed by the OOM killer (SIGKILL) at the memory limit of {}",
                           FormatBytes(p.memory_limit))
             : std::string("killed by the OOM killer (SIGKILL): out of memory");
}

// Whether the run read through the page cache (odirect, gds, and io_uring or pool with
// direct=on do not; owned with direct=auto did where it opened no file with O_DIRECT, its
// details' direct_files, as it does for a file it found in the cache).
bool ReadsThroughPageCache(const StrategyInfo& info, const RunRecord& r) {
  if ((info.flags & kDirectIO) == 0) return true;
  const auto direct = r.params.find("direct");
  if (direct == r.params.end() || !direct->is_string()) return false;
  if (*direct == "auto") {
    return r.details.is_object() && r.details.value("direct_files", uint64_t{1}) == 0;
  }
  return *direct == "off";
}

// A warm run that went to storage for more than a trace of the file measured another state.
void CheckWarmReads(const StrategyInfo& info, const RunPoint& p, RunRecord* r) {
  if (r->status != "ok" || p.cache != "warm" || !r->read_bytes) return;
  if (!ReadsThroughPageCache(info, *r)) return;
  if (std::string why = WarmReadProblem(*r->read_bytes, r->file_bytes); !why.empty()) {
    r->status = "invalid";
    r->error = std::move(why);
  }
}

// A cold run that read less than most of the model from storage did not load it, whatever it
// says; without I/O counters that cannot be told, and the record says so.
void CheckColdReads(const RunPoint& p, RunRecord* r) {
  if (r->status != "ok" || p.cache != "cold") return;
  if (!r->read_bytes) {
    r->warnings.push_back("no I/O counters: whether the cold run read the model from storage "
                          "is not checked");
    return;
  }
  if (std::string why = ColdReadProblem(*r->read_bytes, r->file_bytes); !why.empty()) {
    r->status = "invalid";
    r->error = std::move(why);
  }
}

// What the runner measured around the readers: the cache state before and after, the page
// cache (the file's own pages, and the whole cache, which other activity moves too), what a
// container would have been charged, and the check of the start state.
void AddHost(const RunPoint& p, const HostState& h, RunRecord* r) {
  r->resident_before = h.resident_before;
  r->server_resident_before = h.server_resident_before;
  if (r->shards) r->worst_shard_resident = h.worst;
  if (h.drop_method) r->drop_method = *h.drop_method;
  r->warm_reads = h.warm_reads;
  if (h.resident_after) r->resident_after = *h.resident_after;
  if (h.pages_after) {
    r->memory.file_cache_growth_bytes =
        (static_cast<int64_t>(*h.pages_after) - static_cast<int64_t>(h.pages_before)) * 4096;
  }
  if (h.cached_before && h.cached_after) {
    r->memory.page_cache_growth_bytes =
        static_cast<int64_t>(*h.cached_after) - static_cast<int64_t>(*h.cached_before);
  }
  if (!h.cgroup_procs.empty()) {
    r->memory.cgroup_peak_bytes = h.cgroup_peak_bytes;
    r->memory.cgroup_oom_kills = h.oom_kills;
  }
  if (r->status != "ok") return;
  if (std::string why = StartStateProblem(p.cache, h.worst); !why.empty()) {
    r->status = "invalid";
    r->error = std::move(why);
  }
}

// A host that could not be prepared: no figure measured from it may count, but that is not a
// failure of the strategy (unsupported where no memory cgroup can be made here).
void HostNotPrepared(const RunPoint& p, const ReaderOutcome& o, RunRecord* r) {
  r->status = o.host.unsupported ? "unsupported" : "invalid";
  if (o.host.unsupported) {
    r->error = o.host.error;
  } else if (o.host_name) {
    r->error = fmt::format("preparing the run on host {}: {}", *o.host_name, o.host.error);
  } else {
    r->error = fmt::format("preparing the {} run: {}", p.cache, o.host.error);
  }
}

}  // namespace

RunRecord Complete(const RunRecord& base, const Judging& j, size_t k, ReaderOutcome& o) {
  const RunPoint& p = *j.point;
  RunRecord r = o.error.empty() && o.host.ok ? std::move(o.record) : RunRecord{};
  CopyIdentity(base, &r);
  if (j.in_process) return r;
  if (p.procs > 1) r.proc = static_cast<int>(k);
  r.host = o.host_name;
  r.rank = o.rank;
  r.ranks = o.ranks;
  r.cache_by_rank = o.cache_by_rank;
  if (!o.host.ok) {
    HostNotPrepared(p, o, &r);
    return r;
  }
  if (!o.error.empty()) {
    r.status = "failed";
    r.error = o.error;
  }
  if (auto oom = OomKilled(p, o.signal, o.host); oom && r.status == "failed") {
    r.error = *oom;
    r.oom_killed = true;
  }
  r.process_s = o.process_s;
  if (o.nic_rx_bytes) r.nic_rx_bytes = o.nic_rx_bytes;
  if (o.nic_tx_bytes) r.nic_tx_bytes = o.nic_tx_bytes;
  SetProcessUsage(o.usage, &r);
  AddHost(p, o.host, &r);
  if (j.check_warm_reads && j.info != nullptr) CheckWarmReads(*j.info, p, &r);
  if (j.check_cold_reads && p.procs <= 1) CheckColdReads(p, &r);  // several: together
  return r;
}

void CheckColdReadsTogether(const RunPoint& p, std::vector<RunRecord>* run) {
  if (p.cache != "cold") return;
  std::map<std::string, std::vector<RunRecord*>> hosts;  // "" on one machine
  for (RunRecord& r : *run) hosts[r.host.value_or("")].push_back(&r);
  for (const auto& [host, readers] : hosts) {
    uint64_t read = 0, need = 0;
    bool counted = true;
    for (const RunRecord* r : readers) {
      counted = counted && r->read_bytes.has_value();
      read += r->read_bytes.value_or(0);
      need += r->needed_bytes.value_or(r->file_bytes);
    }
    // Each byte they need from storage once: the model's at most, however many read it whole.
    need = std::min(need, readers.front()->file_bytes);
    const std::string why = counted ? ColdReadProblem(read, need) : "";
    for (RunRecord* r : readers) {
      if (r->status != "ok") continue;
      if (!counted) {
        r->warnings.push_back("not every reader has I/O counters: whether the cold run read the "
                              "model from storage is not checked");
      } else if (!why.empty()) {
        r->status = "invalid";
        r->error = fmt::format("the {} readers {}together {}", readers.size(),
                               host.empty() ? "" : fmt::format("on host {} ", host), why);
      }
    }
  }
}

void SetStartSpread(std::vector<RunRecord>* run) {
  std::optional<double> first, last;
  int started = 0;
  for (const RunRecord& r : *run) {
    if (!r.load_start_unix_s) continue;
    ++started;
    first = std::min(first.value_or(*r.load_start_unix_s), *r.load_start_unix_s);
    last = std::max(last.value_or(*r.load_start_unix_s), *r.load_start_unix_s);
  }
  if (started < 2) return;
  const double spread = std::round((*last - *first) * 1e6) / 1e6;  // to the microsecond
  for (RunRecord& r : *run) r.start_spread_s = spread;
}

}  // namespace loadbench
