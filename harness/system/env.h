// env.json: what a result depends on besides the code, recorded once per results folder.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace loadbench {

// Describes this machine for results about `file_path`: host, CPU model and cores, memory,
// kernel, the block device and filesystem holding the file (model, rotational, scheduler,
// read-ahead), transparent huge pages, page size, compiler, loadbench version and commit,
// whether we are root. Anything that cannot be read is null, never guessed.
// "limits": whether /proc/sys/vm/drop_caches is writable, RLIMIT_MEMLOCK soft and hard (bytes,
// or "unlimited"), kernel.io_uring_disabled and kernel.perf_event_paranoid.
nlohmann::ordered_json CollectEnv(const std::string& file_path);

// A whole small file (/proc, /sys), nullopt when it cannot be read.
std::optional<std::string> ReadFile(const std::string& path);

}  // namespace loadbench
