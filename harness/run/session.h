// What the runs of one command share: how they are measured (measure/measure.h) and where their
// records go (record/reporter.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/measure/measure.h"
#include "harness/record/reporter.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"

namespace loadbench {

struct RunSession {
  MeasureSettings measure;
  Reporter reporter;
  bool root = false;
};

// Starts a session: SIGINT/SIGTERM handlers, no SIGPIPE, the binary, root or not, the stamp.
void StartSession(RunSession* rs);

// The path of this loadbench binary (/proc/self/exe), for the processes it starts.
std::string SelfExe();

// Removes what strategies leave behind (a shared segment) for `file`, reporting failures.
void CleanupStrategies(const std::vector<StrategySpec>& specs, const std::string& file,
                       const std::string& who);

// env.json's fields on how runs were measured: cache control, counters, timelines, probe.
void AddMeasurementEnv(const std::string& file, const std::vector<std::string>& counters,
                       double sample_ms, nlohmann::ordered_json* env);

}  // namespace loadbench
