// Inside harness/probe: what the probe command (probe.cc) and `probe --storage`
// (storage_command.cc) share.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/probe/probe.h"
#include "loaders/base/status.h"

namespace loadbench::probe {

// The probe object before its figures: `kind` ("full", "quick", "storage"), when, the boot, the
// scratch file (`dir`, its device, `bytes`), every ceiling of kCeilings null, no facts yet.
nlohmann::ordered_json NewProbeObject(const char* kind, const std::string& dir, uint64_t bytes);
// The settings that shape results, from env.json (CollectEnv), as the probe's "facts".
nlohmann::ordered_json ProbeFacts(const nlohmann::ordered_json& env);
// Checks --size and the scratch directory (created if missing, with room for the file):
// *dir absolute, *size rounded up to whole MiB. kBadInput naming the reason.
Status CheckProbeScratch(const ProbeOptions& opts, uint64_t* size, std::string* dir);
// The results folder (--out, or results/probe-<UTC time>), created; *env_path must not exist.
Status MakeProbeOutDir(const ProbeOptions& opts, std::string* out, std::string* env_path);

// `loadbench probe --storage SPEC` (storage_command.cc): ProbeMain's exit codes.
int StorageProbeMain(const ProbeOptions& opts);

}  // namespace loadbench::probe
