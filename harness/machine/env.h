// env.json: what a result depends on besides the code, recorded once per results folder.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/machine/tuning.h"

namespace loadbench {

// Describes this machine for results about `file_path`: host, CPU model and cores, memory,
// kernel, the block device and filesystem holding the file (model, rotational, scheduler,
// read-ahead), transparent huge pages, page size, compiler, loadbench version and commit,
// whether we are root. Anything that cannot be read is null, never guessed.
// "limits": whether /proc/sys/vm/drop_caches is writable, RLIMIT_MEMLOCK soft and hard (bytes,
// or "unlimited"), kernel.io_uring_disabled and kernel.perf_event_paranoid.
// "system": every setting that changes a load's time and whether the machine is in the tuned
// state (SystemEnv in harness/machine/tuning.h), under the tune `system tune` saved, if any.
nlohmann::ordered_json CollectEnv(const std::string& file_path);

// env.json's "system" now: under `own`, the tune this command made itself, else under the one
// `system tune` saved (harness/machine/tune_state.h), if any.
nlohmann::ordered_json SystemEnvNow(const std::string& file_path, const TuneRecord* own);

// A whole small file (/proc, /sys), nullopt when it cannot be read.
std::optional<std::string> ReadFile(const std::string& path);

}  // namespace loadbench
