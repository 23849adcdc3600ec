#include "harness/launch/ranks.h"
#include "loadbench_commit.h"

#include <fmt/format.h>

#include "harness/launch/command.h"
#include "harness/launch/workers.h"
#include "harness/net/nic_counters.h"
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
  RankJson j = {{"record", WireJson(o.record)},
                {"error", o.error},
                {"signal", o.signal},
                {"process_s", o.process_s},
                {"usage",
                 {o.usage.ru_utime.tv_sec, o.usage.ru_utime.tv_usec, o.usage.ru_stime.tv_sec,
                  o.usage.ru_stime.tv_usec, o.usage.ru_majflt, o.usage.ru_minflt}}};
  Put(j, "nic_rx_bytes", o.nic_rx_bytes);
  Put(j, "nic_tx_bytes", o.nic_tx_bytes);
  return j;
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
  Get(j, "nic_rx_bytes", &o.nic_rx_bytes);
  Get(j, "nic_tx_bytes", &o.nic_tx_bytes);
  const RankJson& u = j["usage"];
  if (u.is_array() && u.size() == 6) {
    o.usage.ru_utime = {u[0].get<time_t>(), u[1].get<suseconds_t>()};
    o.usage.ru_stime = {u[2].get<time_t>(), u[3].get<suseconds_t>()};
    o.usage.ru_majflt = u[4].get<long>();
    o.usage.ru_minflt = u[5].get<long>();
  }
  return o;
}

// This rank's reader, when it has one and its host (`host`) was prepared: a worker loading its
// part, sampled and profiled as the request says (rank 0's only), or the run's command; released
// once every rank is at the start barrier (`all_ready`).
ReaderOutcome RunMine(const Job& job, const LaunchRequest& req, const HostState& host,
                      const std::function<void()>& all_ready, bool* stopped) {
  LaunchRequest mine = req;
  mine.all_readers = req.readers;
  mine.readers = 1;
  if (mine.program.empty()) {
    return std::move(RunWorkers(mine, "", job.rank(), all_ready, stopped).at(0));
  }
  HostState in = host;  // a rank's command runs in no cgroup, as its worker would
  in.cgroup_procs.clear(), in.cgroup_dir.clear(), in.cgroup.clear();
  in.no_cgroup = "under MPI a rank's command runs in no memory cgroup";
  return std::move(RunCommandReaders(mine, in, job.rank(), all_ready, stopped).at(0));
}

// What this node's interfaces carried between two readings, on its reader's outcome; nothing
// when either reading failed (the outcome's record then has no such figure).
void AddNicCounters(const std::optional<NicCounters>& before, ReaderOutcome* o) {
  NicCounters after;
  if (!before || !ReadNicCounters(&after).ok()) return;
  const auto moved = [](uint64_t a, uint64_t b) { return b >= a ? b - a : 0; };
  o->nic_rx_bytes = moved(before->rx_bytes, after.rx_bytes);
  o->nic_tx_bytes = moved(before->tx_bytes, after.tx_bytes);
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
  Ranks(const Job& job, bool commands) : job_(job), commands_(commands) {}
  std::string NotOffered(int readers, uint64_t memory_limit) const override {
    if (readers > job_.size()) {
      return fmt::format("{} readers, but the job has {} rank{}", readers, job_.size(),
                         job_.size() == 1 ? "" : "s");
    }
    return memory_limit > 0 ? "a memory limit is not offered across MPI ranks" : "";
  }
  // A run's commands are judged as on one machine (launch/command.h).
  bool checks_warm_reads() const override { return !commands_; }
  bool checks_cold_reads() const override { return commands_; }
  std::string unprofiled(size_t k) const override {
    if (commands_) return kExecUnprofiled;
    return k == 0 ? "" : "under MPI only rank 0's reader is profiled";
  }
  std::vector<ReaderOutcome> Launch(const LaunchRequest& req, const HostSteps& host,
                                    bool* interrupted) override {
    job_.Broadcast(RunMessage(req).dump());
    return RunOnEveryRank(job_, req, host, interrupted);
  }

 private:
  const Job& job_;
  const bool commands_;
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
  std::optional<NicCounters> nic_before;  // right before its reader is released
  const std::function<void()> meet = [&] {
    job.Barrier(/*prompt=*/true);
    met = true;
    if (NicCounters c; req.nic_counters && ReadNicCounters(&c).ok()) nic_before = c;
  };
  ReaderOutcome mine;
  if (reader && mine_start.ok) mine = RunMine(job, req, mine_start, meet, &stopped);
  AddNicCounters(nic_before, &mine);
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
  RankJson m = {{"type", "run"},
                {"s3rver", req.s3rver},
                {"worker", RequestJson(req.worker)},
                {"cache", req.cache},
                {"readers", req.readers},
                {"parts", req.part_checksums},
                {"part_bytes", req.part_bytes},
                {"model_bytes", req.model_bytes},
                {"timeout_s", req.timeout_s},
                {"peer_token", req.peer_token},
                {"nic_counters", req.nic_counters}};
  if (!req.program.empty()) {
    m["exec"] = {{"program", req.program}, {"argv", req.argv}, {"timed", req.timed}};
  }
  return m;
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
  if (run.contains("part_bytes") && run["part_bytes"].is_array()) {
    r.part_bytes = run["part_bytes"].get<std::vector<uint64_t>>();
  }
  r.model_bytes = run.value("model_bytes", uint64_t{0});
  r.nic_counters = run.value("nic_counters", false);
  Status s = ReadWorkerRequest(run.value("worker", RankJson()), &r.worker);
  r.file_paths = {r.worker.file};
  if (const RankJson exec = run.value("exec", RankJson()); exec.is_object()) {
    r.program = exec.value("program", "");
    r.argv = exec.value("argv", std::vector<std::string>{});
    r.timed = exec.value("timed", "command");
    if ((r.program.empty() || r.argv.empty()) && s.ok()) {
      s = Status::BadInput("run message: an exec run without its program or argv");
    }
    // Never a worker in a command's place: a program that cannot be run fails its record.
    if (r.program.empty()) r.program = "(no program in the run message)";
    if (r.argv.empty()) r.argv = {r.program};
  }
  return s;
}

void EndJob(const Job& job, int code) {
  job.Broadcast(RankJson({{"type", "end"}, {"code", code}}).dump());
}

std::unique_ptr<Launcher> RanksLauncher(const Job& job, bool commands) {
  return std::make_unique<Ranks>(job, commands);
}

}  // namespace loadbench
