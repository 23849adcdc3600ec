// The run record: one line of runs.jsonl, as one typed struct. The worker fills what it
// measures inside its own process and sends the struct to the runner over its result pipe; the
// runner adds what it measures from outside (rusage, residency, the page cache, the cgroup) and
// what identifies the run, and appends the record. Keys are written in one place (record.cc), in
// the order of the fields below, which is the order docs/results-format.md documents (a test
// holds the two together).
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench {

// The worker's memory at the end of the load (bytes, from /proc/self/status and
// smaps_rollup), and what the runner saw the page cache and the cgroup do over the run.
struct MemoryFigures {
  std::optional<uint64_t> rss_bytes, rss_anon_bytes, rss_file_bytes, rss_shmem_bytes;
  std::optional<uint64_t> pss_bytes, pss_anon_bytes, pss_file_bytes, pss_shmem_bytes;
  std::optional<uint64_t> shared_clean_bytes, shared_dirty_bytes;
  std::optional<uint64_t> private_clean_bytes, private_dirty_bytes;
  std::optional<int64_t> file_cache_growth_bytes;  // the file's own pages (runner)
  std::optional<int64_t> page_cache_growth_bytes;  // Cached in /proc/meminfo (runner)
  std::optional<uint64_t> cgroup_peak_bytes;       // under a memory limit only (runner)
  std::optional<uint64_t> cgroup_oom_kills;        // under a memory limit only (runner)
};

struct RunRecord {
  using Json = nlohmann::ordered_json;

  // What the run is.
  std::string run_id;  // <UTC start>-<sequence>, unique within the results folder
  std::string experiment;
  std::string strategy;       // the name, or "ceiling"
  std::string strategy_spec;  // as written: "fread:chunk=4MiB"
  // The strategy's flags (FlagNames: "eager,allocates,..."); absent for ceilings and commands.
  std::optional<std::string> strategy_flags;
  Json params = Json::object();  // every option resolved
  Json use;                      // the use options resolved; null when not resolved
  std::optional<std::string> label;
  std::vector<std::string> command;  // exec runs: the argv as run
  std::string file;                  // absolute
  std::string format;
  uint64_t file_bytes = 0;         // a sharded model: every shard's
  std::optional<uint64_t> shards;  // only for a model of several files
  std::string cache;               // "cold" or "warm"
  int rep = 0;
  std::optional<int> position;         // in its round; absent in grouped order
  std::optional<std::string> after;    // the spec of the run made just before
  std::optional<int> procs;            // only when more than one worker loads at once
  std::optional<int> proc;             // which of those workers
  std::optional<std::string> pattern;  // with procs: what each loads (loaders/use/part.h)
  // Under MPI only (harness/launch/job.h): the host the worker ran on, the rank that ran it, the
  // job's size, and the host's first rank, which made and checked the cache state.
  std::optional<std::string> host;
  std::optional<int> rank, ranks;
  std::optional<int> cache_by_rank;  // the rank that made and checked its host's cache state
  std::optional<uint64_t> memory_limit_bytes;  // only under a memory cgroup
  std::optional<std::string> link;             // the link's rate, on a link only
  std::optional<int> nodes;  // in a [cluster] only: the run's nodes (its readers, one per node)
  // In a [cluster] only: the session (env.json `sessions`) that ran it, whose cluster it crossed,
  // and the cluster's rates, part of the run's identity.
  std::optional<int> session;
  std::optional<std::string> nic, uplink;
  std::optional<std::string> storage;  // with [[storage]] only: the storage's label
  std::string started_at;              // UTC, before the cache state is made
  std::string ended_at;                // UTC, once the workers are reaped

  // How it ended.
  std::string status = "failed";  // ok, failed, unsupported, invalid
  std::optional<std::string> error;
  std::optional<bool> checksum_ok;
  std::optional<std::string> checksum;     // hex xxh3-64 of the loaded bytes
  std::optional<std::string> verify;       // how the bytes were checked
  std::optional<std::string> drop_method;  // cold runs only
  // Warm runs only: how many times the file was read into the cache before the start state
  // held (1 but where the cache lost part of it between the read and the check).
  std::optional<int> warm_reads;
  std::optional<bool> oom_killed;  // only when the OOM killer killed the worker
  // What the run's figures leave unsaid though it counts (an exec command's processes left
  // running); only when there is something.
  std::vector<std::string> warnings;

  // Times, in seconds from the start of the timed region (docs/design.md).
  std::optional<double> wall_s, ready_s, first_use_s, open_s;
  std::optional<double> transform_s, bind_s, consume_s, verify_s, teardown_s;
  std::optional<double> process_s, user_s, sys_s;  // the worker process (runner)
  std::optional<double> load_user_s, load_sys_s;   // the timed region only (worker)
  // When the timed region started: CLOCK_REALTIME, to the microsecond (worker); and for a run
  // of several readers, the latest start minus the earliest (runner).
  std::optional<double> load_start_unix_s, start_spread_s;

  // Memory, faults and I/O.
  std::optional<uint64_t> peak_rss_bytes, start_rss_bytes, anon_huge_bytes;
  std::optional<uint64_t> major_faults, minor_faults;            // runner: wait4's rusage
  std::optional<uint64_t> load_major_faults, load_minor_faults;  // the timed region (worker)
  std::optional<uint64_t> read_bytes;
  std::optional<double> resident_before, resident_after;  // runner
  std::optional<std::string> read_as;  // what the readers opened, when not `file` (a server's name)
  std::optional<double> server_cpu_s;  // the experiment's server: its CPU seconds during the run
  std::optional<double> mount_cpu_s;   // the s3fs mount's process: its CPU seconds during the run
  std::optional<uint64_t> link_rx_bytes;  // on a link: what its client end received in the run
  // The bytes this reader needed: its part of the model (loaders/use/part.h), the whole model's
  // tensor bytes for a reader of the whole.
  std::optional<uint64_t> needed_bytes;
  // On a cluster's node: what its NIC carried in and out over the run, the interface's own
  // counters in its namespace (/proc/net/dev), headers included.
  std::optional<uint64_t> nic_rx_bytes, nic_tx_bytes;
  // On a storage the tool made with a block device of its own: the device's counters over the
  // run (/sys/block/NAME/stat), and the average request and requests per second they give.
  std::optional<uint64_t> device_reads, device_read_bytes, device_read_merges;
  std::optional<uint64_t> device_read_ms, device_queue_ms;
  std::optional<double> device_request_bytes, device_reads_per_s;
  // A remote model served from this machine: the residency of the files its server reads
  std::optional<double> server_resident_before;
  // A sharded model: the shard that started farthest from the cache state (runner)
  std::optional<double> worst_shard_resident;
  MemoryFigures memory;
  Json counters = Json::object();            // event name to count, null where it cannot count here
  std::vector<std::string> counters_scaled;  // only when the kernel multiplexed counters
  std::optional<std::string> timeline;       // timelines/RUN_ID.csv (runner)
  // Profiled runs only (runner): the profile's figures and its folded stacks'
  // (profiles/RUN_ID.folded), or null with profile_error saying why none was taken.
  std::optional<Json> profile;
  std::optional<std::string> profile_error;

  // What was loaded and what the use did with it.
  std::optional<uint64_t> tensor_count, tensor_bytes;
  std::optional<std::string> consume_result;
  std::optional<uint64_t> unaligned_tensors, untyped_tensors, aligned_copy_bytes;
  std::optional<uint64_t> transformed_bytes, loads;
  Json details;  // what the strategy observed; null when it reported nothing
  Json device;   // strategies into GPU memory only
  Json exec;     // exec runs only: what the command said and how it was measured

  // Ceiling records only.
  std::optional<uint64_t> ceiling_bytes;
  std::optional<double> gb_per_s;
  std::optional<double> settle_s;  // the buffered read after it
  Json ceiling_recipes;            // every recipe's figure, where it measured several

  // Sent by the worker, never written: CLOCK_MONOTONIC at the start of the timed region, where
  // the runner's timeline of the run starts; and, when profiled, the stretches of the load's own
  // time perf sampled ([[begin, end], ...], CLOCK_MONOTONIC seconds), the profile's window.
  std::optional<double> load_start_mono_s;
  Json profile_window_mono_s;
};

// The strategy name of a ceiling run: in a round of a cold condition, the device's limit over
// the same files, the fastest of a few cold read recipes (harness/probe/read_recipes.h), so
// that every strategy's time can also be read as a fraction of the device's speed at that
// moment. Not a strategy: analyses keep its records apart.
inline constexpr const char* kCeiling = "ceiling";
// On a link (harness/net/link.h), in every round: the link's own limit (iperf3 over it) and
// the server's (the model fetched from it into nothing, the link's shaping lifted). Not
// strategies either.
inline constexpr const char* kLinkCeiling = "link_ceiling";
inline constexpr const char* kServerCeiling = "server_ceiling";
// Whether a record's strategy names one of the ceilings (disk, link, server).
inline bool IsCeilingName(const std::string& s) {
  return s == kCeiling || s == kLinkCeiling || s == kServerCeiling;
}

// Copies what the runner says a run is (the identity fields up to started_at) from `from` onto
// a reader's record: not which reader it was or where (proc, host, rank, ranks,
// cache_by_rank), and params and use only where the reader sent none.
void CopyIdentity(const RunRecord& from, RunRecord* to);

// The number of records that are failed or invalid.
int CountBad(const std::vector<RunRecord>& records);

// The UTC time now in strftime's `format`; to the millisecond: "YYYY-MM-DDTHH:MM:SS.mmmZ".
std::string NowStamp(const char* format);
std::string NowUtcMs();

// The process's CPU time and faults from wait4's rusage: user_s, sys_s, major_faults,
// minor_faults.
void SetProcessUsage(const rusage& usage, RunRecord* r);

// The record as runs.jsonl holds it: every field in order, the optional ones only when set.
nlohmann::ordered_json RecordJson(const RunRecord& r);

// The worker's line on its result pipe: every field, set or not, and the wire-only ones.
nlohmann::ordered_json WireJson(const RunRecord& r);
// Reads a worker's line; kFailed when it is not a record.
Status FromWireJson(const nlohmann::ordered_json& j, RunRecord* out);

// Every key a record can hold, in order; nested ones as "memory.rss_bytes".
std::vector<std::string> RecordKeys();

}  // namespace loadbench
