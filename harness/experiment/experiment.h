// Experiment files: a TOML file that states a question and the runs that answer it, read and
// expanded into the list of runs (the plan). The file's shape:
//
//   # Question: how does io_uring's queue depth change a cold load?
//   name = "io-depth"              # recorded as each run's `experiment`
//   reps = 3                       # rounds (repetitions of every run; default 3), or "auto":
//   auto_target = 0.10             #   rounds until every paired ratio with the baseline is
//   auto_min_rounds = 6            #   known within ±10% (95% interval), between these
//   auto_max_rounds = 30           #   bounds, within a time budget ("30min"; default none)
//   auto_budget = "30min"
//   baseline = "fread"             # the strategy point ratios are against (default: fread
//                                  # when there is one, else the first point)
//   ceiling = true                 # a device read in every round of a cold condition
//   cache = ["cold"]               # "cold", "warm", or a list of them (default both)
//   order = "balanced"             # "interleaved", "shuffled" or "grouped"; the first two
//   seed = 0                       #   draw from `seed`
//   timeout_s = 600                # per run, 0 = none (default 0)
//   profile = true                 # a CPU profile of every load (perf; docs/profile.md)
//   profile_hz = 250               #   samples per second (default 250)
//   procs = [1, 2, 4]              # readers loading the model at the same time: workers on
//                                  #   this machine, or under MPI ranks of the job, one worker
//                                  #   each (default 1; under MPI the job's size)
//   pattern = ["replicated", "tp"] # what each reader loads (loaders/use/part.h): replicated,
//                                  #   tp, tp:DIM, pp, files (default replicated); one reader
//                                  #   loads the whole model whatever the pattern
//   memory_limit = ["8GiB", "2GiB"]  # each run in a memory cgroup of this limit, as in a
//                                  # container; "none" for no cgroup (default none)
//
//   [link]                         # the server behind a shaped link (harness/net/link.h); the
//   rate = ["1gbit", "unshaped"]   #   rates are a condition of the plan, each round on a link
//   delay = "1ms"                  #   measures the link (iperf3) and the server's own limit
//   streams = 8                    #   iperf3's streams (default: the most concurrency of the
//   seconds = 3                    #   strategy points, times the condition's procs); its time
//
//   [cluster]                      # the readers as nodes (harness/net/cluster.h): one network
//   nodes = [1, 2, 4, 8]           #   namespace and one MPI rank each (docs/fleet.md); nodes
//   nic = "200mbit"                #   is an axis of the plan (procs = nodes), each record's
//   uplink = "400mbit"             #   `nodes`; nic: each node's link; uplink: the store's,
//   streams = 4                    #   where the [server] runs; iperf3's streams and seconds
//   seconds = 2                    #   measuring each link both ways
//
//   [[storage]]                    # the model on a storage the tool makes (docs/storage.md):
//   kind = "xfs"                   #   ext4, xfs, btrfs, squashfs, erofs, overlay, tmpfs, fuse,
//   preset = "gp3"                 #   here; a device class (preset, read_bps, read_iops) on a
//   read_iops = 6000               #   loop-backed kind; each table one value of the axis, its
//   label = "gp3-fast"             #   runs in rounds of their own; records' `storage`
//
//   [system]                       # the machine's state for the runs (harness/machine/tuning.h)
//   tune = true                    # tuned before the first run, restored at the end (default
//                                  #   false: recorded as found)
//   page_reporting = "off"         # "off" (held off, the default) or "keep" (left on, recorded)
//
//   [[file]]                       # a file to generate (cached by spec in the data folder)...
//   preset = "llama"
//   size = "4GiB"                  # or a multiple of this machine's memory: "1.25xRAM"
//   format = "wlf"                 # wlf, safetensors, gguf (default wlf)
//   align = 4096                   # optional; the format's default otherwise
//   seed = 0
//   dtype = "bf16"
//   endian = "little"              # or "big" (WLF only); misalign = 0..63 (safetensors only)
//   shards = 4                     # optional: the model in 4 shards, or in shards of at most
//                                  #   shard_size = "256MiB" (not both); the runs load the
//                                  #   model's path (ModelPath: the index, or the first GGUF
//                                  #   split)
//
//   [[file]]                       # ...or one to use as it is
//   path = "models/model.gguf"
//
//   [[strategy]]                   # every other key is an option; a list is a grid axis
//   name = "io_uring"
//   qd = [1, 4, 16, 64]
//   chunk = ["256KiB", "1MiB", "4MiB"]
//
//   [[strategy]]                   # any command, measured like a worker (docs/exec.md)
//   name = "exec"
//   label = "numpy-fromfile"       # its row; required, unique
//   command = ["/usr/bin/python3", "{peers}/numpy_fromfile.py", "{file}"]
//   shell = false                  # true: command is one string for /bin/sh -c
//   package = "python3-numpy"      # named when the program is not found
//
// Rounds (harness/experiment/rounds.h): each repetition runs every file, cache state, procs count
// and memory limit once, and in each of those conditions every strategy point (and the ceiling)
// back to back, so that drift on a shared machine hits all alike: by default in the rows of a
// Williams design (balanced: each follows every other equally often, so what a run leaves
// behind does not always land on the same successor), or rotated by one per round
// (interleaved), or in a seeded shuffle (shuffled). Grouped order: all repetitions of one
// combination back to back (no rounds; not with reps = "auto").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/experiment/command.h"
#include "harness/experiment/rounds.h"
#include "harness/gen/generator.h"
#include "harness/machine/tuning.h"
#include "harness/storage/storage.h"
#include "loaders/base/status.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/part.h"
#include "loaders/use/spec.h"
#include "loaders/use/use.h"

namespace loadbench {

inline constexpr int kDefaultProfileHz = 250;
inline constexpr int kMaxProfileHz = 10000;

struct ExperimentFile {
  std::string path;  // the file to load; for a generated one ModelPath(gen): gen.out_path,
                     // or a sharded model's index or first GGUF split
  bool generate = false;
  GenOptions gen;           // when generate
  uint64_t file_bytes = 0;  // planned size of a generated file (a sharded model: of all its
                            // files, GenPlan::total_bytes); 0 for a given one
};

// One point of a strategy's grid.
struct ExperimentStrategy {
  StrategySpec spec;                // name and options as a run gets them; spec.text as on the CLI
  ResolvedSpec resolved;            // the spec resolved, once (no strategy: unsupported, exec)
  std::string unsupported;          // why it cannot run (unknown strategy, bad option), else empty
  std::optional<ExecCommand> exec;  // an exec strategy's command (spec: "exec:label=LABEL")
};

struct ExperimentRun {
  size_t file = 0;      // index into Experiment::files
  size_t strategy = 0;  // index into Experiment::strategies; past its end, a ceiling (below)
  std::string cache;    // "cold" or "warm"
  int rep = 0;
  int procs = 1;
  uint64_t memory_limit = 0;  // bytes; 0: none
  int position = -1;          // place in its round; -1 in grouped order
  ReadPattern pattern;        // what each of the procs readers loads
  std::string link;           // the link's rate for the run; "" without a [link]
  size_t storage = 0;         // index into Experiment::storages (0 without any)
};

// The runs past the strategies: strategies.size() + each of these.
inline constexpr size_t kDiskCeilingRun = 0;    // the device read (ceiling = true, cold rounds)
inline constexpr size_t kLinkCeilingRun = 1;    // the link's own limit (iperf3)
inline constexpr size_t kServerCeilingRun = 2;  // the server's own limit, the link unshaped

// [system]: whether the runs ask for the tuned machine, and what it holds free page reporting to.
struct ExperimentSystem {
  bool tune = false;
  // tune = "auto": tuned where this machine lets the command (root, a kernel that takes the
  // values), else said on stderr and run in the state found, which env.json records.
  bool tune_auto = false;
  // Touch as much new memory as a run uses, and give it back, just before the first run
  // (harness/machine/settle.h), so that it starts as the runs after it do.
  bool settle = true;
  PageReportingChoice page_reporting = PageReportingChoice::kOff;
};

// [server]: a server on this machine (loopback) that serves the data folder for the runs whose
// strategy reads through it (harness/run/remote_files.h).
struct ExperimentServer {
  std::string kind;                  // "http" (nginx) or "s3" (s3rver); empty: no server
  std::string bucket = "loadbench";  // s3: the bucket the files are put into
  uint64_t limit_rate = 0;           // http: bytes per second per connection; 0: none
};

// [link]: the experiment's server behind a shaped link, at each of `rates` in turn.
struct ExperimentLink {
  std::vector<std::string> rates;  // as ParseLinkRate takes them; empty: no link
  std::string delay;               // netem's delay; "" for none
  int streams = 0;                 // iperf3's; 0: the most concurrency of the points x procs
  int seconds = 3;                 // iperf3's time per measurement
};

// [cluster]: the readers as nodes of a cluster on this machine (harness/net/cluster.h), one MPI
// rank each (harness/run/cluster_run.h), the experiment's server in the store's namespace.
struct ExperimentCluster {
  std::vector<int> nodes;  // an axis of the plan, as procs is (procs = nodes); empty: no cluster
  std::string nic = "200mbit", uplink = "400mbit";  // each node's link, the store's
  int streams = 4;                                  // iperf3's, measuring each link
  int seconds = 2;                                  // iperf3's time per link and direction
  bool on() const { return !nodes.empty(); }
};

// [[storage]]: one value of the storage axis (harness/storage/storage.h), and where it was
// written ("PATH:LINE" or "--storage"), named in a message about it.
struct ExperimentStorage {
  StorageSpec spec;
  std::string where;
  bool probe = true;  // its own probe taken when it is made (probe = false: not; 15 to 25 s)
};

struct Experiment {
  std::string path;  // the experiment file; empty for one built from `run`'s flags
  std::string name;
  std::string question;  // the file's opening "# Question:" comment, without the #s
  int reps = 3;          // with auto_reps: the most rounds planned (auto.max_rounds)
  bool auto_reps = false;
  AutoReps autoreps;
  std::string baseline;  // a strategy point's spec text
  bool ceiling = false;
  std::vector<std::string> caches = {"cold", "warm"};
  RoundOrder order = RoundOrder::kBalanced;
  uint64_t seed = 0;  // of the balanced or shuffled order
  double timeout_s = 0;
  bool profile = false;  // every worker's load sampled by perf (harness/profile/profile.h)
  int profile_hz = kDefaultProfileHz;
  std::vector<int> procs = {1};
  bool procs_given = false;  // the file set procs (else MPI makes it the job's size)
  std::vector<ReadPattern> patterns = {ReadPattern()};  // parsed once, when read
  std::vector<uint64_t> memory_limits = {0};
  ExperimentSystem system;
  ExperimentServer server;
  ExperimentLink link;
  ExperimentCluster cluster;
  // The storages the model is put on, one after another, each with every round of its own
  // (the outermost axis: a storage is made once, its runs made, and removed); empty: the data
  // folder as it is, and no record names a storage.
  std::vector<ExperimentStorage> storages;
  std::vector<ExperimentFile> files;
  std::vector<ExperimentStrategy> strategies;
  std::vector<ExperimentRun> runs;  // the plan, in the order the runs are made
};

// Reads and expands the experiment at `path`; generated files go to `data_dir`. A malformed
// file is kBadInput with "PATH:LINE: reason". A strategy that does not exist here or an option
// it does not take is not an error: its runs are planned and reported `unsupported`.
Status LoadExperiment(const std::string& path, const std::string& data_dir, Experiment* out);

// --reps and --auto-* from the command line, over the experiment's own settings (a file's, or
// `run`'s defaults); what was not given is unset.
struct RepsOverrides {
  std::optional<int> reps;
  bool auto_reps = false;
  std::optional<double> target, budget_s;
  std::optional<int> min_rounds, max_rounds;
  bool any() const;
};

// Applies the overrides and plans the runs again. kBadInput when an --auto-* option comes
// without automatic reps, when the result is out of range (CheckAutoReps), or when automatic
// reps meet grouped order.
Status ApplyRepsOverrides(const RepsOverrides& o, Experiment* e);

// Whether run `r` is a ceiling (of the disk, the link or the server), not a strategy's.
inline bool IsCeilingRun(const Experiment& e, const ExperimentRun& r) {
  return r.strategy >= e.strategies.size();
}

// kBadInput when the order is grouped and the experiment asks for ceilings (ceiling = true, or
// a [link], whose own ceilings run in every round): a ceiling is read in each round and compared
// with that round's runs, and grouped order has no rounds.
Status CheckGroupedOrder(const Experiment& e);

// Expands the files, strategies, cache states, procs, memory limits and reps into e->runs in
// the experiment's order (LoadExperiment does this; call it again after changing reps).
void PlanRuns(Experiment* e);

}  // namespace loadbench
