// A storage's own probe (`loadbench probe --storage`, docs/probe.md): the device figures of a
// model's files where they sit, cold: what each read recipe gets (the storage's device limit),
// what an O_DIRECT read gets at each request size at queue depth 1 and deeper, and the reads
// per second it sustains for small random requests. Every figure reads for a bounded time and
// gives its rate from what arrived in it, so a slow or throttled device costs seconds, not the
// size of the files over its rate. Where the storage has a block device, each figure carries the
// device's own count of the requests it served and their average size: a loop device splits
// an O_DIRECT request from 4 KiB pages at 512 KiB (128 segments), and a device limited in
// operations per second is as fast as its requests are large.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench::probe {

// How long each figure reads at most; the requests in flight then still arrive.
inline constexpr double kStorageFigureSeconds = 1.25;

// One figure of the request sweep: O_DIRECT reads of `request_bytes` with `depth` in flight,
// front to back over the files ("sequential") or at random whole blocks ("random").
struct RequestShape {
  uint64_t request_bytes;
  unsigned depth;
  bool random;
};

// The sweep: 64 KiB, 256 KiB, 1 MiB and 4 MiB sequential at depth 1 and deeper (32; 8 for
// 4 MiB, so that at most 32 MiB are in flight), then 4 KiB and 16 KiB random at depth 32, the
// reads per second.
const std::vector<RequestShape>& StorageRequestShapes();

struct StorageProbeOptions {
  double figure_seconds = kStorageFigureSeconds;
  // Sees one line per figure once it is measured ("[3/17] 1 MiB sequential QD1: 0.42 GB/s").
  std::function<void(const std::string&)> progress;
};

// The read side of a block device's counters (/sys/class/block/NAME/stat, as /sys/block/NAME/stat
// for a whole device); nullopt when they cannot be read.
struct DeviceReads {
  uint64_t reads = 0;    // requests completed
  uint64_t sectors = 0;  // of 512 bytes
};
std::optional<DeviceReads> ReadDeviceReads(const std::string& device);

// Probes the device under the files `paths_on_storage` (a model's files on one storage),
// `device` its block device ("loop3"; "" for none: tmpfs, fuse), each figure cold (every file's
// cache dropped and checked <= 1% resident before it) and bounded by opts.figure_seconds, into
// *out:
//   {"device", "files", "bytes", "figure_seconds",
//    "ceilings": {"device_limit": the fastest read recipe (gb_per_s, recipe, params, and every
//                 recipe's record under "recipes"), "cold_direct_read": the first recipe's
//                 record (O_DIRECT io_uring QD32 1 MiB), "cold_buffered_read": read() of 1 MiB
//                 with the default read-ahead},
//    "requests": [{"pattern", "request_bytes", "depth", "bytes", "seconds", "gb_per_s", "iops",
//                  "capped", "cold_checks", and with a device "device_reads",
//                  "device_request_bytes"}, ...] in the order of StorageRequestShapes(),
//    "iops": the most reads per second of any request figure, "iops_at": its request_bytes,
//    depth and pattern, "wall_s"}.
// Every read record has "device_reads" and "device_request_bytes" (the device's requests in
// the figure and their average bytes) where `device` is given. A figure that cannot be measured
// (O_DIRECT refused, a cache that does not drop) is null beside its "reason", as the probe's
// figures are. kBadInput without files, or for a file that cannot be opened or sized;
// kFailed "interrupted" once Interrupted() (process/interrupt.h).
Status ProbeStorageDevice(const std::vector<std::string>& paths_on_storage,
                          const std::string& device, nlohmann::ordered_json* out,
                          const StorageProbeOptions& opts = {});

// The table of a storage probe's object: one line per read recipe and per request figure
// (request size and depth, GB/s, reads per second, the device's average request bytes).
std::string StorageProbeTable(const nlohmann::ordered_json& probe);

}  // namespace loadbench::probe
