// `loadbench probe`: this machine's ceilings (the device, the page cache, memory, page faults)
// and the settings that shape every result, so that any result can be read against them.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace loadbench {

struct ProbeOptions {
  std::string dir = "data";   // where the scratch file goes; created if missing
  std::string size = "1GiB";  // of the scratch file, rounded up to whole MiB; at least 1 MiB
  std::string out_dir;        // empty: results/probe-<UTC yyyymmdd-HHMMSS>
  bool json = false;          // print the probe object as JSON instead of the table
  bool no_wait = false;       // refuse (exit 2) while another measurement runs, not wait
  std::string command_line;   // recorded in env.json
  // "KIND[:OPTION=VALUE...]" (harness/storage/storage.h ParseStorage): make that storage with
  // the scratch file in it and probe its device only (harness/probe/storage_probe.h); "": the
  // machine's probe.
  std::string storage;
};

// The ceilings, in the order they are measured and printed: each one's key under the probe
// object's "ceilings", and the key of its figure there. A figure is a positive number, or
// null beside a "reason".
struct CeilingSpec {
  const char* key;
  const char* figure;
  const char* label;
  const char* unit;
};
inline constexpr CeilingSpec kCeilings[] = {
    {"sequential_write", "gb_per_s", "sequential write, 1 MiB blocks, fsync", "GB/s"},
    {"cold_direct_read", "gb_per_s", "cold read, O_DIRECT io_uring QD32 1 MiB", "GB/s"},
    {"cold_buffered_read", "gb_per_s", "cold read, buffered read() 1 MiB", "GB/s"},
    // The fastest of the read recipes (harness/probe/read_recipes.h): the rounds' ceiling.
    {"device_limit", "gb_per_s", "cold read, the fastest read recipe", "GB/s"},
    {"warm_read", "gb_per_s", "warm read from the page cache, read() 1 MiB", "GB/s"},
    {"memcpy", "gb_per_s", "memcpy", "GB/s"},
    {"memory_fill", "gb_per_s", "memory fill, memset of faulted-in memory", "GB/s"},
    {"h2d_pinned", "gb_per_s", "host to GPU, cudaMemcpy from pinned memory", "GB/s"},
    {"h2d_pageable", "gb_per_s", "host to GPU, cudaMemcpy from pageable memory", "GB/s"},
    {"anon_4k_fault", "us_per_fault", "first-touch 4 KiB anonymous fault", "us/fault"},
    {"thp_fault", "us_per_fault", "first-touch THP fault (2 MiB)", "us/fault"},
    {"file_minor_fault", "us_per_fault", "minor fault, cached file page via mmap", "us/fault"},
    // The first user access to fresh memory by who populated it (harness/probe/first_touch.cc).
    {"first_touch_user_write", "first_s_per_gib", "first access: user write faults", "s/GiB"},
    {"first_touch_map_populate", "first_s_per_gib", "first access after MAP_POPULATE", "s/GiB"},
    {"first_touch_populate_write", "first_s_per_gib", "first access after MADV_POPULATE_WRITE",
     "s/GiB"},
    {"first_touch_read", "first_s_per_gib", "first access after read(2) into it", "s/GiB"},
    {"first_touch_direct_read", "first_s_per_gib", "first access after O_DIRECT read into it",
     "s/GiB"},
};

// The probe command. Writes the scratch file in opts.dir (it has no name there and never
// outlives the process), measures every ceiling, prints progress on stderr and the table (or
// with opts.json the probe object) on stdout, writes OUT/env.json (CollectEnv of the scratch
// dir, the command line, and "probe") and caches the probe object at ProbeCachePath().
// Returns the exit code: 0 done (a figure that could not be measured is null with its
// reason); 1 env.json could not be written; 2 bad input, one line on stderr naming the path
// and the reason (a bad --size, a directory that cannot be created or written, too little
// free space, an --out that already holds env.json), nothing written; 130 interrupted by
// SIGINT/SIGTERM, nothing written.
// With opts.storage: the scratch file is written in opts.dir with a name, copied onto the
// storage made (Storage::Make) and removed; the storage is entered (its device class applied),
// its device probed (ProbeStorageDevice: the read recipes, the request sizes and depths, the
// IOPS), left and removed. The probe object has kind "storage", the device ceilings
// (cold_direct_read, cold_buffered_read, device_limit) and the others null with the reason,
// "requests", "iops", "iops_at" and "storage_device"; env.json has it as "probe" beside
// "storages": [Storage::Env()] (as a run's env.json lists the storages it made; "storage" stays
// the machine's disk). It is not cached: the storage is gone when the command ends.
// Exit 2 also for a storage text ParseStorage refuses, a made kind without root, and what
// StorageUnavailable says this machine lacks; 1 when the storage could not be made.
int ProbeMain(const ProbeOptions& opts);

// ${XDG_CACHE_HOME:-$HOME/.cache}/loadbench/probe.json; "" when neither gives an absolute
// directory.
std::string ProbeCachePath();

// Beside it, probe-quick.json: the quick probe that ProbeForRun made first in this boot.
std::string QuickProbeCachePath();

// The probe cached at ProbeCachePath() when it is from this boot, with "source", "age_s" and
// "same_device" (whether `file_path` lives on the device it measured) added; else nullopt and
// *why says why (missing, corrupt, another boot).
std::optional<nlohmann::ordered_json> CachedProbe(const std::string& file_path, std::string* why);

// The probe to store as env["probe"] of a run on `file_path`. When ProbeCachePath() holds a
// probe from this boot (boot_id), that one, plus "source" (the cache path), "age_s" and
// "same_device" (whether `file_path` lives on the device the probe measured; null when
// `file_path` cannot be stat'ed). Otherwise a quick probe made here, under about 2 s and
// without device I/O: memcpy, the memory fill and the three fault costs on small sizes (the file
// fault on an unnamed 16 MiB file beside `file_path`, else in $TMPDIR or /tmp), the facts, and the
// device and warm-read figures null; "source" is "quick" and "note" says why the cache was not used
// (missing, corrupt, another boot) and to run `loadbench probe`. That quick probe is kept at
// QuickProbeCachePath(), and the runs after it in the same boot take it from there ("source"
// its path, "age_s", "same_device"), as they would a full one: a command's memory figures are
// then the boot's, not made again by every command. Never throws.
nlohmann::ordered_json ProbeForRun(const std::string& file_path);

}  // namespace loadbench
