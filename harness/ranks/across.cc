#include "harness/ranks/across.h"
#include "loadbench_commit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/system/cache.h"
#include "harness/system/interrupt.h"
#include "harness/system/leftovers.h"
#include "harness/system/locks.h"
#include "loaders/base/proc_fields.h"
#include "loaders/loader.h"

namespace loadbench {
namespace {

const char* const kVersion = LOADBENCH_VERSION " (" LOADBENCH_COMMIT ")";

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

// What this rank answers to the check: its version; a host's first rank, each file as it sees
// it there (rank 0's are prepared already).
RankJson Identity(const Job& job, const RankJson& check, const std::string& who,
                  std::vector<PreparedFile>* files) {
  RankJson me = {{"version", kVersion}, {"files", RankJson::array()}};
  if (!job.host_leader()) return me;
  if (job.rank() != 0) files->clear();
  const RankJson& wanted = check["files"];
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (job.rank() != 0) {
      PreparedFile f;
      if (Status s = PrepareFile(wanted[i].value("path", ""), who, &f); !s.ok()) {
        me["files"].push_back({{"error", s.message()}});
        continue;
      }
      files->push_back(std::move(f));
    }
    const PreparedFile& f = files->back();
    me["files"].push_back({{"bytes", f.table.file_size}, {"checksum", Hex(*f.table.expected_checksum)}});
  }
  return me;
}

// This rank's worker as rank 0 records it: what the worker sent (or why it sent nothing), its
// process's usage; invalid when its host's cache state could not be made.
RankJson Partial(const Job& job, const RankJson& start, const WorkerOutcome& w) {
  RunRecord r;
  if (!start.value("ok", false)) {
    r.status = "invalid";
    r.error = fmt::format("preparing the run on host {}: {}", job.host(),
                          start.value("error", "?"));
    return WireJson(r);
  }
  if (w.error.empty()) {
    r = w.record;
  } else {
    r.error = w.error;
  }
  r.process_s = w.process_s;
  SetProcessUsage(w.usage, &r);
  return WireJson(r);
}

// The host's state before and after, as ReaderRecord reads it, onto a record.
void HostFigures(const RankJson& start, const RankJson& after, const std::string& cache,
                 RunRecord* r) {
  r->resident_before = start.value("resident_before", 0.0);
  if (r->shards) r->worst_shard_resident = start.value("worst", 0.0);
  if (start.contains("drop_method")) r->drop_method = start.value("drop_method", "");
  if (after.is_object() && after.contains("resident_after")) {
    r->resident_after = after.value("resident_after", 0.0);
    r->memory.file_cache_growth_bytes =
        (after.value("pages", int64_t{0}) - start.value("pages", int64_t{0})) * 4096;
  }
  if (after.is_object() && after.contains("cached") && start.contains("cached")) {
    r->memory.page_cache_growth_bytes =
        after.value("cached", int64_t{0}) - start.value("cached", int64_t{0});
  }
  if (r->status != "ok") return;
  if (std::string why = StartStateProblem(cache, start.value("worst", 0.0)); !why.empty()) {
    r->status = "invalid";
    r->error = std::move(why);
  }
}

}  // namespace

std::string RankDifference(int k, const std::string& host, const RankJson& check,
                           const RankJson& answer) {
  const std::string where = fmt::format("rank {} (host {})", k, host);
  const std::string version = answer.value("version", "?");
  if (version != check.value("version", "")) {
    return fmt::format("{} runs loadbench {}, rank 0 runs {}", where, version,
                       check.value("version", "?"));
  }
  const RankJson& files = answer["files"];
  for (size_t i = 0; i < files.size() && i < check["files"].size(); ++i) {
    const RankJson& want = check["files"][i];
    const RankJson& got = files[i];
    const std::string path = want.value("path", "?");
    if (got.contains("error")) return fmt::format("{}: {}", where, got.value("error", "?"));
    if (got.value("bytes", uint64_t{0}) != want.value("bytes", uint64_t{0}) ||
        got.value("checksum", "") != want.value("checksum", "")) {
      return fmt::format("{} sees a different model at {}: {} bytes, checksum {}; rank 0 sees "
                         "{} bytes, checksum {}", where, path, got.value("bytes", uint64_t{0}),
                         got.value("checksum", "?"), want.value("bytes", uint64_t{0}),
                         want.value("checksum", "?"));
    }
  }
  return "";
}

RankJson ParseRankJson(const std::string& text) {
  RankJson j = RankJson::parse(text, nullptr, false);
  return j.is_discarded() ? RankJson::object() : j;
}

RankJson CheckMessage(const std::vector<PreparedFile>& files) {
  RankJson m = {{"type", "check"}, {"version", kVersion}, {"files", RankJson::array()}};
  for (const PreparedFile& f : files) {
    m["files"].push_back({{"path", f.path}, {"bytes", f.table.file_size},
                          {"checksum", Hex(*f.table.expected_checksum)}});
  }
  return m;
}

std::string CheckRanks(const Job& job, const RankJson& check, const std::string& who,
                       std::vector<PreparedFile>* files) {
  const std::vector<std::string> all = job.AllGather(Identity(job, check, who, files).dump());
  for (int k = 0; k < job.size(); ++k) {
    const std::string d =
        RankDifference(k, job.host_of(k), check, ParseRankJson(all[static_cast<size_t>(k)]));
    if (!d.empty()) return d;
  }
  return "";
}

RankJson HostStartJson(const Status& prep, const ModelResidency& before, const char* drop,
                       const std::string& cache, std::optional<uint64_t> cached) {
  if (!prep.ok()) return {{"ok", false}, {"error", prep.message()}};
  RankJson j = {{"ok", true}, {"resident_before", before.total.fraction()},
                {"worst", before.Worst(cache)}, {"pages", before.total.resident_pages}};
  if (cache == "cold") j["drop_method"] = drop;
  if (cached) j["cached"] = *cached;
  return j;
}

RankJson HostAfterJson(const std::optional<ModelResidency>& after,
                       std::optional<uint64_t> cached) {
  RankJson j = RankJson::object();
  if (after) j["resident_after"] = after->total.fraction(), j["pages"] = after->total.resident_pages;
  if (cached) j["cached"] = *cached;
  return j;
}

std::vector<RankJson> RunOnEveryRank(const Job& job, int readers, SpawnRequest spawn,
                                     const HostSteps& host, WorkerOutcome* mine,
                                     bool* interrupted) {
  const RankJson start = job.host_leader() ? host.prepare() : RankJson::object();
  const std::vector<std::string> starts = job.AllGather(start.dump());
  const RankJson my_start = ParseRankJson(starts.at(static_cast<size_t>(job.leader_of(job.rank()))));
  const bool reader = job.rank() < readers;
  bool stopped = false;
  job.Barrier();  // every reader starts at the same moment
  if (reader && my_start.value("ok", false)) {
    std::vector<WorkerOutcome> out = SpawnWorkers(spawn, &stopped);
    *mine = std::move(out.at(0));
  }
  job.Barrier();  // every reader is done: the host's figures after
  const RankJson after = job.host_leader() ? host.after() : RankJson();
  const RankJson outcome = {{"host", job.host()}, {"reader", reader},
                            {"interrupted", stopped || Interrupted()}, {"start", my_start},
                            {"after", after},
                            {"record", reader ? Partial(job, my_start, *mine) : RankJson()}};
  *interrupted = stopped || Interrupted();
  std::vector<RankJson> all;
  for (const std::string& o : job.Gather(outcome.dump())) {
    all.push_back(ParseRankJson(o));
    *interrupted = *interrupted || all.back().value("interrupted", false);
  }
  return all;
}

RunRecord ReaderRecord(const Job& job, const std::vector<RankJson>& outcomes, int k,
                       const std::string& cache) {
  const RankJson& o = outcomes.at(static_cast<size_t>(k));
  RunRecord r;
  if (!o.contains("record") || !FromWireJson(o["record"], &r).ok()) {
    r.status = "failed";
    r.error = fmt::format("rank {} sent no record of its reader", k);
  }
  r.host = o.value("host", job.host_of(k));
  r.rank = k;
  r.ranks = job.size();
  r.cache_by_rank = job.leader_of(k);
  const RankJson& after = outcomes.at(static_cast<size_t>(job.leader_of(k)))["after"];
  if (o.contains("start") && o["start"].value("ok", false)) HostFigures(o["start"], after, cache, &r);
  return r;
}

RankJson RunMessage(const RunSession& rs, const PreparedFile& f, const RunPoint& p) {
  RankJson m = {{"type", "run"}, {"path", f.path},
                {"strategy", p.spec.text}, {"cache", p.cache}, {"pattern", p.pattern},
                {"readers", p.procs}, {"expect", Hex(*f.table.expected_checksum)},
                {"parts", RankJson::array()}, {"timeout_s", rs.timeout_s},
                {"counters", rs.counters.empty() ? "none" : fmt::format("{}", fmt::join(rs.counters, ","))}};
  if (p.procs > 1 && p.pattern != "replicated") {
    for (uint64_t sum : f.part_checksums.at(PartsKey(p.pattern, p.procs))) m["parts"].push_back(Hex(sum));
  }
  return m;
}

SpawnRequest ReaderSpawn(const Job& job, const RankJson& run, const std::string& exe) {
  SpawnRequest s;
  s.exe = exe;
  s.file = run.value("path", "");
  s.strategy = run.value("strategy", "");
  s.counters = run.value("counters", "none");
  s.expect_checksum = run.value("expect", "none");
  s.pattern = run.value("pattern", "replicated");
  s.timeout_s = run.value("timeout_s", 0.0);
  const RankJson& parts = run["parts"];
  if (parts.is_array() && static_cast<int>(parts.size()) > job.rank()) {
    s.first_part = job.rank();
    s.parts = static_cast<int>(parts.size());
    s.part_checksums = {parts[static_cast<size_t>(job.rank())].get<std::string>()};
  }
  return s;
}

void EndJob(const Job& job, int code) {
  job.Broadcast(RankJson({{"type", "end"}, {"code", code}}).dump());
}

}  // namespace loadbench
