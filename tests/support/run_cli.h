// Test support: run the built binary (LOADBENCH_BINARY) as a child process, two ways. Tests that
// check messages capture stdout and stderr apart in memory (RunLoadbench); end-to-end runner
// tests send them to files beside their results (RunLoadbenchInto) and read runs.jsonl back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench::test {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that killed it, else 0
  std::string out;
  std::string err;
};

// Runs LOADBENCH_BINARY with `args` (this process's environment, stdin from /dev/null), stdout
// and stderr captured apart. `on_stderr`, when given, sees stderr so far after every read, with
// the child's pid. A child still running after `limit` (60 s unless a test that must not wait
// gives less) is killed with SIGKILL (reported as signal 9) and the test fails: the sanitizer
// half of `make test` has no ctest timeout.
ProcessResult RunLoadbench(const std::vector<std::string>& args,
                           const std::function<void(const std::string&, pid_t)>& on_stderr = {},
                           std::chrono::milliseconds limit = std::chrono::seconds(60));

// "exit N, signal S" and both streams, for failure messages.
std::string Describe(const ProcessResult& r);

// Runs `LOADBENCH_BINARY args` through the shell with stdout and stderr in dir/stdout.txt and
// dir/stderr.txt; returns the exit code, or 128 + the signal that killed it.
int RunLoadbenchInto(const std::string& dir, const std::string& args);

// The whole file, or "" when it cannot be read.
std::string ReadWholeFile(const std::string& path);

// Every line of out_dir/runs.jsonl, parsed (throws on a line that is not JSON).
std::vector<nlohmann::json> ReadRuns(const std::string& out_dir);

}  // namespace loadbench::test
