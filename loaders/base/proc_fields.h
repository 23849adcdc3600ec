// The "Key:   value [kB]" files of /proc (meminfo, self/status, self/smaps_rollup, self/io):
// one reader for all of them, so that every figure taken from them is parsed the same way.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loadbench {

// Every "Key: number [kB]" line of `text` as key to number, in bytes where the unit is kB
// (VmRSS, Pss, MemAvailable), as written where there is none (read_bytes, HugePages_Free);
// lines without a number after the colon are skipped.
std::map<std::string, uint64_t> ParseProcFields(std::string_view text);

// One field of such a text already read (kB fields in bytes), signed for figures subtracted
// from each other; nullopt when there is no text or no such field.
std::optional<int64_t> ProcFieldIn(const std::optional<std::string>& text, const std::string& key);

// The same, read from `path`; empty when it cannot be read.
std::map<std::string, uint64_t> ReadProcFields(const std::string& path);

// One field of `path` (kB fields in bytes); nullopt when absent.
std::optional<uint64_t> ProcField(const std::string& path, const std::string& key);

// A field of /proc/meminfo ("MemAvailable", "Cached", "Hugepagesize" in bytes; "HugePages_Free"
// a count); nullopt when the kernel does not report it.
std::optional<uint64_t> MeminfoBytes(const std::string& key);

// The fields of /proc/PID/stat, numbered as in proc(5): [3] is the state, [4] the parent's
// pid, [22] the start time; [1] and [2] (pid, command name) are left empty. Empty when there
// is no such process. The command name may hold spaces and parentheses: fields are counted
// from its last ')'.
std::vector<std::string> ProcStatFields(long pid);

// The processes above process `pid` (this one when 0): its parent, its parent's, and so on, init
// left out.
std::vector<long> AncestorPids(long pid = 0);

}  // namespace loadbench
