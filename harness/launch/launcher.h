// The launcher contract: how the readers of one run are started, whatever they are. A run's
// measurement (harness/measure/measure.h) is one sequence for every kind of reader; what
// differs is behind this interface, in the spirit of fio's I/O engines:
//   workers  `loadbench worker` processes on this machine (launch/workers.h), held after their
//            loads until all have loaded, so that their memory is measured side by side;
//   command  an exec strategy's command per reader (launch/command.h): each in its own process
//            group, a cgroup to measure them by even without a memory limit, what each left
//            alive killed and counted (left_behind), its own verification, checked on a cold run
//            against what the readers read from storage; no warm-read check, no profile;
//   ranks    a reader on each rank of an MPI job (launch/ranks.h), a worker or a command: one
//            host preparation per host (by its first rank), all ranks released at once, rank
//            0's reader sampled and profiled (a worker);
//   ceiling  a ceiling's read in this process (launch/ceiling.h): the device's, the link's or
//            the server's limit, one read for the run whatever its readers, which makes its own
//            start state and reports every figure itself: no host step, nothing measured around
//            it.
// A launcher gets the run as plain data (LaunchRequest) and the host's steps (HostSteps),
// which it calls at the right moment: prepare right before its readers start, after once all
// have ended. It gives back one ReaderOutcome per reader (for a ceiling, one), completed into
// records by the caller.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/launch/request.h"
#include "harness/machine/timeline.h"
#include "harness/record/record.h"

namespace loadbench {

// A run's readers as a launcher starts them.
struct LaunchRequest {
  std::string exe;  // the loadbench binary the workers run
  // What every reader is told (launch/request.h): the model as the readers open it, the
  // resolved strategy, the counters, the model's checksum as the runner read it, the pattern;
  // a launcher sets what differs between its readers (part, place, descriptors).
  WorkerRequest worker;
  std::vector<std::string> file_paths;  // the model's files, for the timeline
  std::string cache;                    // "cold" or "warm"
  // Readers of parts (loaders/use/part.h): reader k loads part k of part_checksums.size() and
  // must give part_checksums[k]; empty: the whole model each.
  std::vector<uint64_t> part_checksums;
  // The tensor bytes of each part, beside part_checksums; and of the whole model, which a reader
  // of the whole needs: a reader's needed_bytes (record/record.h).
  std::vector<uint64_t> part_bytes;
  uint64_t model_bytes = 0;
  int readers = 1;
  int all_readers = 0;  // under MPI: the run's readers over every rank (readers: this rank's)
  // The endpoint of the experiment's own s3rver, which the readers are pointed at
  // (net/server.h PointAtS3rver); "" for none: they read as their environment says.
  std::string s3rver;
  std::string link;      // the link's rate, on a link (harness/net/link.h); "" without one
  double timeout_s = 0;  // 0: none
  double sample_s = 0;   // the timeline's interval; 0: no timeline
  // The run's secret, which its readers present to each other (loaders/blocks/peers.h
  // LOADBENCH_FLEET_TOKEN): a new one for every run.
  std::string peer_token;
  // Under MPI on a cluster's nodes (harness/run/cluster_run.h): each rank reads its namespace's
  // interface counters right before its reader starts and right after it ends (net/
  // nic_counters.h), for its record's nic_rx_bytes and nic_tx_bytes.
  bool nic_counters = false;
  // Profiles (harness/profile/profile.h): perf's path and rate, where each reader's data goes.
  std::string perf, profile_dir;
  int profile_hz = 0;
  // Commands (empty program: workers): the resolved program, the argv to run, and the region
  // its wall_s is (experiment/command.h: "command" or "region").
  std::string program;
  std::vector<std::string> argv;
  std::string timed = "command";
};

// One host's state around a run, as its preparation made it and its measurement after found
// it; what the readers' records take from outside.
struct HostState {
  bool ok = false, unsupported = false;  // prepared, or why not (error)
  std::string error;
  double resident_before = 0, worst = 0;  // the model's residency; its farthest shard's
  // A remote model: the residency of the files a server on this machine reads it from; unset
  // when it is served from elsewhere (harness/cache/served.h).
  bool remote = false;
  std::optional<double> server_resident_before;
  uint64_t pages_before = 0;
  std::optional<std::string> drop_method;  // cold runs
  std::optional<int> warm_reads;           // warm runs: the reads that made the start state
  std::optional<uint64_t> cached_before, oom_before;
  std::optional<double> resident_after;
  std::optional<uint64_t> pages_after, cached_after, oom_kills;
  // This machine only: the memory cgroup the readers join ("" for none), its version or why
  // there is none, and its peak once they ended.
  std::string cgroup_procs, cgroup_dir, cgroup, no_cgroup;
  std::optional<uint64_t> cgroup_peak_bytes;
};

// The host steps a launcher calls: `prepare` right before its readers start (the cache state
// made and checked), `after` once every reader has ended.
struct HostSteps {
  std::function<HostState()> prepare;
  std::function<void(HostState*)> after;
};

// What the runner learns about one reader.
struct ReaderOutcome {
  RunRecord record;   // what the reader reported, when it did (error empty)
  std::string error;  // why there is no usable record
  int signal = 0;     // the signal that killed it, when one did
  rusage usage{};
  double process_s = 0;  // from fork to reaping
  std::vector<TimelineSample> timeline;
  std::string profile_data;   // perf's data of the timed region, when it was profiled
  std::string profile_error;  // why a profile asked for was not taken
  HostState host;             // its host before and after
  // Under MPI: its host's name, its rank, the job's size, the rank that prepared its host.
  std::optional<std::string> host_name;
  std::optional<int> rank, ranks, cache_by_rank;
  // What its node's interfaces carried in and out around it (LaunchRequest::nic_counters).
  std::optional<uint64_t> nic_rx_bytes, nic_tx_bytes;
};

class Launcher {
 public:
  virtual ~Launcher() = default;

  // Why this launcher cannot run `readers` readers under `memory_limit` bytes (0: none), or "".
  virtual std::string NotOffered(int readers, uint64_t memory_limit) const = 0;
  // A cgroup to measure the readers by even without a memory limit.
  virtual bool measuring_cgroup() const { return false; }
  // Whether a warm run that went to storage is judged invalid (the runner's own readers).
  virtual bool checks_warm_reads() const { return true; }
  // Whether a cold run that read less than most of the model from storage is judged invalid
  // (commands, whose verification is their own word: one that never read the file can still
  // send the checksum stored in it).
  virtual bool checks_cold_reads() const { return false; }
  // Why reader k cannot be profiled, or "".
  virtual std::string unprofiled(size_t k) const = 0;
  // Whether its reader is a read in this process that reports every figure itself (a
  // ceiling's): its record is what it reports under the run's identity, with nothing the
  // runner measures around readers (the host's state, process usage, the server's and the
  // link's meters, a profile).
  virtual bool in_process() const { return false; }

  // Runs the readers to the end: host.prepare, the readers, host.after; one outcome per reader
  // (each with host.ok false when the host could not be prepared, and none started). On
  // timeout the readers are killed and say so; interrupted, it sets *interrupted and the
  // outcomes mean nothing.
  virtual std::vector<ReaderOutcome> Launch(const LaunchRequest& req, const HostSteps& host,
                                            bool* interrupted) = 0;
};

// A launch on this host, as the workers' and the commands' launchers make it: host.prepare,
// the readers (`run`, given the prepared state) when it held, host.after once they ended, and
// every outcome with the host's state; interrupted, *interrupted is set and the outcomes mean
// nothing.
inline std::vector<ReaderOutcome> LaunchHere(
    const LaunchRequest& req, const HostSteps& host, bool* interrupted,
    const std::function<std::vector<ReaderOutcome>(const HostState&)>& run) {
  HostState h = host.prepare();
  std::vector<ReaderOutcome> out;
  if (h.ok) out = run(h);
  out.resize(static_cast<size_t>(req.readers));
  if (*interrupted) return out;
  if (h.ok) host.after(&h);
  for (ReaderOutcome& o : out) o.host = h;
  return out;
}

}  // namespace loadbench
