#include "harness/launch/ranks.h"
#include "loadbench_commit.h"

#include <fmt/format.h>

#include "harness/launch/workers.h"
#include "harness/net/server.h"
#include "harness/process/interrupt.h"

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
    me["files"].push_back(
        {{"bytes", f.table.file_size}, {"checksum", Hex(*f.table.expected_checksum)}});
  }
  return me;
}

template <typename T>
void Put(RankJson& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <typename T>
void Get(const RankJson& j, const char* key, std::optional<T>* v) {
  if (j.contains(key) && !j[key].is_null()) *v = j[key].get<T>();
}

// A reader's outcome as its rank sends it: what its worker sent (or why it sent nothing), how
// it ended, its process's usage.
RankJson OutcomeJson(const ReaderOutcome& o) {
  return {{"record", WireJson(o.record)},
          {"error", o.error},
          {"signal", o.signal},
          {"process_s", o.process_s},
          {"usage",
           {o.usage.ru_utime.tv_sec, o.usage.ru_utime.tv_usec, o.usage.ru_stime.tv_sec,
            o.usage.ru_stime.tv_usec, o.usage.ru_majflt, o.usage.ru_minflt}}};
}

ReaderOutcome OutcomeOf(const RankJson& j, int k) {
  ReaderOutcome o;
  if (!j.contains("record") || !FromWireJson(j["record"], &o.record).ok()) {
    o.error = fmt::format("rank {} sent no record of its reader", k);
    return o;
  }
  o.error = j.value("error", "");
  o.signal = j.value("signal", 0);
  o.process_s = j.value("process_s", 0.0);
  const RankJson& u = j["usage"];
  if (u.is_array() && u.size() == 6) {
    o.usage.ru_utime = {u[0].get<time_t>(), u[1].get<suseconds_t>()};
    o.usage.ru_stime = {u[2].get<time_t>(), u[3].get<suseconds_t>()};
    o.usage.ru_majflt = u[4].get<long>();
    o.usage.ru_minflt = u[5].get<long>();
  }
  return o;
}

// This rank's reader, when it has one and its host was prepared: a worker loading its part,
// sampled and profiled as the request says (rank 0's only), released once every rank is at
// the start barrier (`all_ready`).
ReaderOutcome RunMine(const Job& job, const LaunchRequest& req,
                      const std::function<void()>& all_ready, bool* stopped) {
  LaunchRequest mine = req;
  mine.all_readers = req.readers;
  mine.readers = 1;
  std::vector<ReaderOutcome> out = RunWorkers(mine, "", job.rank(), all_ready, stopped);
  return std::move(out.at(0));
}

// Rank 0's view of every reader: each outcome with its host's state before and after.
std::vector<ReaderOutcome> Assemble(const Job& job, int readers,
                                    const std::vector<std::string>& starts,
                                    const std::vector<RankJson>& all) {
  std::vector<ReaderOutcome> out;
  for (int k = 0; k < readers; ++k) {
    const int leader = job.leader_of(k);
    ReaderOutcome o = OutcomeOf(all.at(static_cast<size_t>(k))["outcome"], k);
    // The host's whole state once measured after, else as prepared (or why it was not).
    const RankJson& after = all.at(static_cast<size_t>(leader))["after"];
    o.host = HostStateOf(after.is_object() ? after
                                           : ParseRankJson(starts.at(static_cast<size_t>(leader))));
    o.host_name = all.at(static_cast<size_t>(k)).value("host", job.host_of(k));
    o.rank = k;
    o.ranks = job.size();
    o.cache_by_rank = leader;
    out.push_back(std::move(o));
  }
  return out;
}

class Ranks final : public Launcher {
 public:
  explicit Ranks(const Job& job) : job_(job) {}
  std::string NotOffered(int readers, uint64_t memory_limit) const override {
    if (readers > job_.size()) {
      return fmt::format("{} readers, but the job has {} rank{}", readers, job_.size(),
                         job_.size() == 1 ? "" : "s");
    }
    return memory_limit > 0 ? "a memory limit is not offered across MPI ranks" : "";
  }
  std::string unprofiled(size_t k) const override {
    return k == 0 ? "" : "under MPI only rank 0's reader is profiled";
  }
  std::vector<ReaderOutcome> Launch(const LaunchRequest& req, const HostSteps& host,
                                    bool* interrupted) override {
    job_.Broadcast(RunMessage(req).dump());
    return RunOnEveryRank(job_, req, host, interrupted);
  }

 private:
  const Job& job_;
};

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
                         "{} bytes, checksum {}",
                         where, path, got.value("bytes", uint64_t{0}), got.value("checksum", "?"),
                         want.value("bytes", uint64_t{0}), want.value("checksum", "?"));
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
    m["files"].push_back({{"path", f.path},
                          {"bytes", f.table.file_size},
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

RankJson HostStateJson(const HostState& h) {
  RankJson j = {{"ok", h.ok},       {"unsupported", h.unsupported},
                {"error", h.error}, {"resident_before", h.resident_before},
                {"worst", h.worst}, {"pages", h.pages_before}};
  Put(j, "drop_method", h.drop_method);
  Put(j, "warm_reads", h.warm_reads);
  Put(j, "cached", h.cached_before);
  Put(j, "oom_before", h.oom_before);
  Put(j, "resident_after", h.resident_after);
  Put(j, "pages_after", h.pages_after);
  Put(j, "cached_after", h.cached_after);
  Put(j, "oom_kills", h.oom_kills);
  return j;
}

HostState HostStateOf(const RankJson& j) {
  HostState h;
  h.ok = j.value("ok", false);
  h.unsupported = j.value("unsupported", false);
  h.error = j.value("error", j.contains("ok") ? "" : "its host sent no state");
  h.resident_before = j.value("resident_before", 0.0);
  h.worst = j.value("worst", 0.0);
  h.pages_before = j.value("pages", uint64_t{0});
  Get(j, "drop_method", &h.drop_method);
  Get(j, "warm_reads", &h.warm_reads);
  Get(j, "cached", &h.cached_before);
  Get(j, "oom_before", &h.oom_before);
  Get(j, "resident_after", &h.resident_after);
  Get(j, "pages_after", &h.pages_after);
  Get(j, "cached_after", &h.cached_after);
  Get(j, "oom_kills", &h.oom_kills);
  return h;
}

std::vector<ReaderOutcome> RunOnEveryRank(const Job& job, const LaunchRequest& req,
                                          const HostSteps& host, bool* interrupted) {
  HostState start;
  if (job.host_leader()) start = host.prepare();
  const std::vector<std::string> starts = job.AllGather(HostStateJson(start).dump());
  const HostState mine_start =
      HostStateOf(ParseRankJson(starts.at(static_cast<size_t>(job.leader_of(job.rank())))));
  const bool reader = job.rank() < req.readers;
  bool stopped = false;
  // The start barrier: every rank's worker set up and ready (or gone), then every rank here,
  // then every worker released. A rank without a reader, or whose reader ended before it was
  // ready, meets the others here all the same.
  bool met = false;
  const std::function<void()> meet = [&] {
    job.Barrier(/*prompt=*/true);
    met = true;
  };
  ReaderOutcome mine;
  if (reader && mine_start.ok) mine = RunMine(job, req, meet, &stopped);
  if (!met) job.Barrier(/*prompt=*/true);
  job.Barrier();  // every reader is done: the host's figures after
  RankJson after;
  if (job.host_leader() && start.ok) {
    host.after(&start);
    after = HostStateJson(start);
  }
  const RankJson outcome = {{"host", job.host()},
                            {"interrupted", stopped || Interrupted()},
                            {"after", after},
                            {"outcome", reader ? OutcomeJson(mine) : RankJson()}};
  *interrupted = stopped || Interrupted();
  std::vector<RankJson> all;
  for (const std::string& o : job.Gather(outcome.dump())) {
    all.push_back(ParseRankJson(o));
    *interrupted = *interrupted || all.back().value("interrupted", false);
  }
  if (job.rank() != 0) return {};
  return Assemble(job, req.readers, starts, all);
}

RankJson RunMessage(const LaunchRequest& req) {
  return {{"type", "run"},
          {"s3rver", req.s3rver},
          {"worker", RequestJson(req.worker)},
          {"cache", req.cache},
          {"readers", req.readers},
          {"parts", req.part_checksums},
          {"timeout_s", req.timeout_s},
          {"peer_token", req.peer_token}};
}

Status RequestOf(const RankJson& run, const std::string& exe, LaunchRequest* out) {
  LaunchRequest& r = *out;
  r.s3rver = run.value("s3rver", "");
  // The experiment's s3rver, started after this rank: pointed at as rank 0 is, with its public
  // keys. Any other store's credentials are this rank's own, as it was started.
  if (!r.s3rver.empty()) PointAtS3rver(r.s3rver);
  r.exe = exe;
  r.cache = run.value("cache", "");
  r.readers = run.value("readers", 1);
  r.timeout_s = run.value("timeout_s", 0.0);
  r.peer_token = run.value("peer_token", "");
  if (run.contains("parts") && run["parts"].is_array()) {
    r.part_checksums = run["parts"].get<std::vector<uint64_t>>();
  }
  const Status s = ReadWorkerRequest(run.value("worker", RankJson()), &r.worker);
  r.file_paths = {r.worker.file};
  return s;
}

void EndJob(const Job& job, int code) {
  job.Broadcast(RankJson({{"type", "end"}, {"code", code}}).dump());
}

std::unique_ptr<Launcher> RanksLauncher(const Job& job) { return std::make_unique<Ranks>(job); }

}  // namespace loadbench
