// Page-cache state of a file: measure it, empty it, fill it. Every cold or warm run rests on
// these: a state is checked, never assumed.
#pragma once

#include <cstdint>
#include <string>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

// Fraction bounds of the cache-state checks (docs/design.md): a cold run must start at most 1%
// resident, a warm one at least 99%.
inline constexpr double kColdMaxResident = 0.01;
inline constexpr double kWarmMinResident = 0.99;
// A warm start is read into the cache at most this many times before its check: a machine that
// pages out page cache by itself may take part of the file between the read and the check.
inline constexpr int kWarmReads = 3;
// A warm run of a strategy that reads through the page cache may read at most this fraction of
// the file from storage: more, and the cache lost the file during the run (memory pressure, a
// run beside it), so the run measured a partly cold load.
inline constexpr double kWarmMaxStorageRead = 0.01;
// A cold run of a command must read at least this fraction of the model from storage, by its
// own I/O counters: less, and it cannot have loaded the model it says it loaded (a command may
// send the checksum stored in the file without reading the file).
inline constexpr double kColdMinStorageRead = 0.9;

// Why a run that starts `resident_fraction` of its file in the page cache cannot count as a
// `cache` ("cold" or "warm") run: "cold run started 2.0% resident (limit 1%)"; empty when it can.
std::string StartStateProblem(const std::string& cache, double resident_fraction);
// Why a warm run of a strategy that reads through the page cache, which read `read_bytes` of its
// `file_bytes` from storage, cannot count as warm; empty when it can.
std::string WarmReadProblem(uint64_t read_bytes, uint64_t file_bytes);
// Why a cold run that read `read_bytes` of its `file_bytes` from storage cannot count as a load
// of the file: "read 12.00 MiB of 2.00 GiB from storage (0.6%) on a cold run: ..."; empty when
// it can.
std::string ColdReadProblem(uint64_t read_bytes, uint64_t file_bytes);

struct Residency {
  uint64_t resident_pages = 0;
  uint64_t total_pages = 0;  // file size in 4 KiB pages, rounded up
  double fraction() const {
    return total_pages == 0 ? 0.0 : static_cast<double>(resident_pages) / total_pages;
  }
};

// How much of `path` is in the page cache now, by cachestat(2) where the kernel has it
// (Linux 6.5+) and mincore(2) over a PROT_READ mapping otherwise. Touches no page of the file.
Status MeasureResidency(const std::string& path, Residency* out);
// "cachestat" or "mincore": what MeasureResidency uses on this kernel.
std::string ResidencyMethod();

enum class DropMethod {
  kDropCaches,  // sync, then "3" into /proc/sys/vm/drop_caches (needs root)
  kFadvise,     // fdatasync, then posix_fadvise(POSIX_FADV_DONTNEED) on the file only
};
const char* DropMethodName(DropMethod m);  // "drop_caches", "fadvise"

// Evicts `path` from the page cache: drop_caches where permitted (DropsWholeCache), else the
// fadvise fallback.
// `used` tells which method took effect. Does not check the result: call MeasureResidency.
Status DropFileCache(const std::string& path, DropMethod* used);

// Whether a cold run empties the whole page cache (drop_caches, as root), not only its files'
// pages (posix_fadvise): false unless root, and false with LOADBENCH_NO_DROP_CACHES=1, which
// `make test` sets for the tests it runs side by side, so that none takes another's warm file
// away. Either way the drop is checked (at most 1% resident).
bool DropsWholeCache();

// Reads `path` fully through the page cache so that it becomes resident.
Status WarmFile(const std::string& path);

// The same over a model's files (its shards; one for a single file): `total` sums the
// shards' pages, and the lowest and highest fraction of any one shard are kept, since a cold
// model must have every shard cold and a warm one every shard warm.
struct ModelResidency {
  Residency total;
  double shard_min = 0, shard_max = 0;
  // Shards of a remote model served from elsewhere: their cache cannot be seen from here, and
  // the figures above leave them out (harness/cache/served.h).
  size_t unseen_shards = 0;
  // The shard fraction farthest from what `cache` asks: cold the highest, warm the lowest; of
  // the shards that can be seen (a model none of whose shards can be seen passes either).
  double Worst(const std::string& cache) const {
    if (total.total_pages == 0 && unseen_shards > 0) return cache == "cold" ? 0.0 : 1.0;
    return cache == "cold" ? shard_max : shard_min;
  }
};
Status MeasureModelResidency(const TensorTable& model, ModelResidency* out);
// DropFileCache over every shard (`used`: the first shard's method, which covers the rest).
Status DropModelCache(const TensorTable& model, DropMethod* used);
// WarmFile over every shard.
Status WarmModel(const TensorTable& model);

// Reads this program's executable and the shared libraries it maps executable (back) into the
// page cache, so that a worker (the same executable) started next does not page them in from
// storage inside its timed region. Returns the bytes read; a file that cannot be read is
// skipped (its pages are then the worker's to fault).
uint64_t ReadBackOwnCode();

}  // namespace loadbench
