// The strategy interface and its registry. A strategy is one way of getting every tensor's
// bytes into memory; it lives in one file under loaders/, declares its options beside its code,
// and registers itself by name at the bottom of that file with LOADBENCH_REGISTER_STRATEGY.
#pragma once

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"
#include "loaders/use/layers.h"

namespace loadbench {

using TensorBytes = std::span<const std::byte>;

// A stretch of the steady clock, from `begin` to `end`.
struct TimeSpan {
  std::chrono::steady_clock::time_point begin{}, end{};
};
// The spans' lengths added up, in seconds.
double SpanSeconds(const std::vector<TimeSpan>& spans);

// What a device strategy (kDevice) delivered: the tensors packed in table order in one
// allocation of GPU memory, and the checksum a kernel computed over them there.
struct DeviceLoad {
  std::chrono::steady_clock::time_point on_device{};  // every copy into the device finished
  std::chrono::steady_clock::time_point verified{};   // the device checksum came back
  uint64_t checksum = 0;
  uint64_t device_bytes = 0;  // GPU memory holding the tensors
  uint64_t pinned_bytes = 0;  // page-locked host memory the strategy used at its peak
  uint64_t copied_bytes = 0;  // bytes moved host to device (0 where storage wrote the device)
};

// One option of a strategy, e.g. fread's `chunk`.
struct OptionSpec {
  // kBytes: a size ("4MiB"), 1 B to 1 TiB. kInt: an integer in [min, max]. kChoice: one word
  // of `choices` ("on", "thp").
  enum class Kind { kBytes, kInt, kChoice };
  std::string name;
  Kind kind;
  std::string default_value;  // as a user would write it: "1MiB", "4", "off"
  std::string help;
  std::vector<std::string> choices = {};  // kChoice only
  int64_t min = 0;                        // kInt only
  int64_t max = INT64_MAX;                // kInt only
};

// The two-word choice that on/off options share.
inline const std::vector<std::string> kOnOff = {"off", "on"};

// Resolved option values of one run: every declared option, defaulted where not given.
class Params {
 public:
  // Fills in defaults and checks every given key against `specs`. kBadInput names the strategy,
  // the key and the reason.
  static Status Resolve(const std::string& strategy, const std::vector<OptionSpec>& specs,
                        const std::map<std::string, std::string>& given, Params* out);
  // The value of a declared option of the matching kind; the name must be declared.
  int64_t Int(const std::string& name) const;
  uint64_t Bytes(const std::string& name) const { return static_cast<uint64_t>(Int(name)); }
  const std::string& Choice(const std::string& name) const;
  bool On(const std::string& name) const { return Choice(name) == "on"; }
  // {"chunk": 1048576, "buffer": "malloc", ...}: sizes and integers as numbers, choices as
  // words, for the `params` field of a run.
  nlohmann::json ToJson() const;

 private:
  std::map<std::string, int64_t> numbers_;
  std::map<std::string, std::string> choices_;
};

// A strategy loads one file. Create one per run; it is not reused and not shared by threads.
class Loader {
 public:
  virtual ~Loader() = default;

  // Brings the tensors of `table` (read from the file at `path`) into memory as this strategy
  // does, and on success stores in `views` one span per tensor, in table order. Views stay
  // valid until this Loader is destroyed. A view need not be resident yet (a mapping faults
  // on first touch): the load is complete only once a consumer has read every byte.
  // Errors: kIOError when the system refuses, kUnsupported when this machine cannot do it,
  // kBadInput when the file is unusable; each message names the file.
  virtual Status Load(const std::string& path, const TensorTable& table,
                      std::vector<TensorBytes>* views) = 0;

  // A strategy flagged kStreams holds one group of tensors at a time: instead of Load it
  // implements this, which for each group in turn brings its tensors in, calls `use` with their
  // views (in the group's order), and releases them before the next group. An error from `use`
  // stops the walk and is returned.
  using GroupUse = std::function<Status(const TensorGroup&, const std::vector<TensorBytes>&)>;
  virtual Status LoadGroups(const std::string& path, const TensorTable& table,
                            const std::vector<TensorGroup>& groups, const GroupUse& use);

  // Asks for views into writable memory, before Load: an in-place transform writes through
  // them. A file mapping is then made PROT_WRITE as well, still MAP_PRIVATE, so that every
  // written page becomes a private copy and the file never changes; strategies that copy into
  // buffers of their own are writable anyway. A strategy that cannot (a segment shared with
  // other processes) returns kUnsupported from Load.
  void RequestWritable() { writable_ = true; }

  // A strategy flagged kDevice implements this instead of Load: it brings every tensor into GPU
  // memory, packed in table order, and runs the device checksum over them there; the load is
  // complete when that checksum is back. Errors as for Load; kUnsupported without a device.
  virtual Status LoadToDevice(const std::string& path, const TensorTable& table, DeviceLoad* out);

  // What this strategy observed that the common fields do not say (shm: its role; io_uring:
  // requeued short reads), as a JSON object for the run's `details` field. Called after Load,
  // whether it succeeded or not; empty by default.
  virtual nlohmann::json Details() const { return nlohmann::json::object(); }

  // A streaming strategy (kStreams): when LoadGroups released groups it was done with
  // (layered: each layer's MADV_DONTNEED and unmap), in order. Every other strategy releases
  // its memory after the timed region; the pipeline keeps these spans out of the load's time
  // (and out of its profile) likewise and counts them as the run's teardown.
  virtual std::vector<TimeSpan> released() const { return {}; }

 protected:
  bool writable_ = false;
};

// Capability flags: what a strategy does, declared beside it, shown by `list` and read by the
// runner and the analysis.
enum StrategyFlag : uint32_t {
  kEager = 1u << 0,          // every byte is in memory when Load returns (ready_s is the I/O)
  kMapsFile = 1u << 1,       // views point into a mapping of the file (page cache pages)
  kAllocates = 1u << 2,      // copies into buffers of its own; takes `buffer=`
  kDirectIO = 1u << 3,       // can bypass the page cache with O_DIRECT
  kThreads = 1u << 4,        // uses threads of its own
  kSharedSegment = 1u << 5,  // leaves a named shared-memory segment; the runner removes it
  kStreams = 1u << 6,        // one layer at a time through LoadGroups; Load is not offered
  kDevice = 1u << 7,         // into GPU memory through LoadToDevice, verified there
  kModel = 1u << 8,          // loads a sharded model itself, across table.shards; any other
                             // strategy is run once per shard (MakeModelLoader)
  kRemote = 1u << 9,         // reads s3:// and http(s):// objects (loaders/remote/), and only
                             // those; every other strategy reads local files only
};
// "eager,allocates": the names of the set flags, in declaration order.
std::string FlagNames(uint32_t flags);

struct StrategyInfo {
  std::string name;
  std::string summary;  // one line: the mechanism
  std::vector<OptionSpec> options;
  std::function<std::unique_ptr<Loader>(const Params&)> make;
  uint32_t flags = 0;  // StrategyFlag bits
  // Empty when the strategy can run here, else the reason it cannot. May probe the kernel.
  std::function<std::string()> unsupported_reason = [] { return std::string(); };
  // Removes what runs of this strategy leave outside their process for `path` (shm: the named
  // segment), or nullptr when they leave nothing. The runner calls it after every run of the
  // strategy, so that no other run is measured beside what it left, and before every cold run,
  // so that cold means nothing of the file is in memory anywhere; once after the last run, also
  // when runs failed or were interrupted, and at the next command's start for a command that
  // was killed before it could. What it removed it names in *removed.
  std::function<Status(const std::string& path, std::vector<std::string>* removed)> cleanup =
      nullptr;
};

// Why `info` cannot load the model at `path`: a remote strategy given a local file, or a local
// strategy given an s3:// or http(s):// name (which a FUSE mount of the bucket turns into a
// local path); empty when it can.
std::string FileKindMismatch(const StrategyInfo& info, const std::string& path);

// Adds a strategy; called from static initializers, one per strategy file.
bool RegisterStrategy(StrategyInfo info);
// Every registered strategy, sorted by name.
std::vector<const StrategyInfo*> Strategies();
// nullptr when no strategy has this name.
const StrategyInfo* FindStrategy(const std::string& name);

// Why a strategy of this name is not in this build: "strategy 'cuda_bounce' is not built: no
// CUDA compiler ..." for the CUDA strategies of a build without the toolkit, else "strategy 'x'
// does not exist in this build".
std::string NotBuiltReason(const std::string& name);
// The reason the CUDA strategies were left out of this build; empty when they are in it.
std::string CudaNotBuiltReason();

// A strategy with its options as written on the command line: "fread:chunk=4MiB".
struct StrategySpec {
  std::string name;
  std::map<std::string, std::string> options;
  std::string text;  // as given, for messages
  // How the readers reach the file (`via=`, taken by every strategy, never one of its options):
  // "" for the file itself, or through an experiment's [server]: "http", "s3", or "s3fs" (a
  // FUSE mount of the bucket).
  std::string via = "";
};

// The values `via=` takes.
bool IsVia(const std::string& v);

// Parses "a,b:k=v:k2=v2,c"; "all" stands for every registered strategy with default options.
// kBadInput for empty names, malformed options or unknown strategies.
Status ParseStrategyList(const std::string& text, std::vector<StrategySpec>* out);

#define LOADBENCH_REGISTER_STRATEGY(info_expr) \
  [[maybe_unused]] static const bool lb_registered_ = ::loadbench::RegisterStrategy(info_expr)

}  // namespace loadbench
