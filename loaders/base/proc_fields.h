// The "Key:   value [kB]" files of /proc (meminfo, self/status, self/smaps_rollup, self/io):
// one reader for all of them, so that every figure taken from them is parsed the same way.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace loadbench {

// Every "Key: number" line of `text` as key to number (a "kB" unit is left to the caller);
// lines without a number after the colon are skipped.
std::map<std::string, uint64_t> ParseProcFields(std::string_view text);

// The same, read from `path`; empty when it cannot be read.
std::map<std::string, uint64_t> ReadProcFields(const std::string& path);

// One field of `path` as written (no unit applied); nullopt when absent.
std::optional<uint64_t> ProcField(const std::string& path, const std::string& key);

// A kB field of /proc/meminfo ("MemAvailable", "Cached", "Hugepagesize") in bytes; nullopt when
// the kernel does not report it.
std::optional<uint64_t> MeminfoBytes(const std::string& key);

}  // namespace loadbench
