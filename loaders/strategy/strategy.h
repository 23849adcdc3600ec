// The interface a strategy implements. A strategy is one way of getting every tensor's bytes
// into memory; it lives in one file under loaders/strategies/ (the GPU ones under loaders/cuda/),
// declares its options beside its code, and registers itself by name at the bottom of that file
// with LOADBENCH_REGISTER_STRATEGY. The registry that finds them is strategy/registry.h.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/format/layers.h"
#include "loaders/format/tensor_table.h"
#include "loaders/strategy/options.h"

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

// Where a reader of a part stands: one of `parts` readers of a run, each loading its part of
// one model by a read pattern (loaders/use/part.h), this one part `part`. The table a strategy
// is given to load is that part; this says what the others load.
struct PartPlace {
  std::shared_ptr<const TensorTable> model;  // the whole model's table, as read
  std::string pattern;                       // as records write it: "tp", "tp:1", "pp", "files"
  int part = 0, parts = 1;
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

  // A strategy may hand out its views before their bytes are in place (owned: each tensor's
  // bytes arrive while the consumer uses those before it). Whoever reads a view asks first:
  // Arrived(i) waits until tensor i's bytes are in place, AllArrived() until every tensor's;
  // either returns the load's error where it failed after Load returned. Ok at once for every
  // other strategy.
  virtual Status Arrived(size_t /*i*/) { return Status::Ok(); }
  virtual Status AllArrived() { return Status::Ok(); }

  // A strategy flagged kStreams holds one group of tensors at a time: instead of Load it
  // implements this, which for each group in turn brings its tensors in, calls `use` with their
  // views (in the group's order), and releases them before the next group. An error from `use`
  // stops the walk and is returned.
  using GroupUse = std::function<Status(const TensorGroup&, const std::vector<TensorBytes>&)>;
  virtual Status LoadGroups(const std::string& path, const TensorTable& table,
                            const std::vector<TensorGroup>& groups, const GroupUse& use);

  // Called before Load (LoadGroups, LoadToDevice) when this reader is one of several, each
  // loading its part of the model by a pattern other than replicated. Strategies whose readers
  // work together (fleet: what each node sends the others) learn from it what every reader
  // loads; the others need not, and ignore it.
  virtual void SetPart(const PartPlace& /*place*/) {}

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
                             // those; every other strategy reads local files only, but
                             // those flagged kBothPlaces
  kBothPlaces = 1u << 10,    // reads local files and remote objects alike (`via` picks which)
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

// Adds a strategy; called from static initializers, one per strategy file.
bool RegisterStrategy(StrategyInfo info);

// Each registration's variable has a name of its own (__COUNTER__), so that strategy files
// compiled together as one unit (the unity build, CMakeLists.txt) do not define one name twice.
#define LOADBENCH_REGISTER_CONCAT_(a, b) a##b
#define LOADBENCH_REGISTER_NAME_(n) LOADBENCH_REGISTER_CONCAT_(lb_registered_, n)
#define LOADBENCH_REGISTER_STRATEGY(info_expr)                               \
  [[maybe_unused]] static const bool LOADBENCH_REGISTER_NAME_(__COUNTER__) = \
      ::loadbench::RegisterStrategy(info_expr)

}  // namespace loadbench
