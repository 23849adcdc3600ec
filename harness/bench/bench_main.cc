// loadbench_bench: Google Benchmark's main, plus the context a reader needs to judge the
// file-backed numbers (where the scratch files went, on which filesystem, with which THP
// settings and kernel), in the console header and in the JSON "context".
#include <benchmark/benchmark.h>

#include <string>

#include <fmt/format.h>

#include "harness/bench/bench_util.h"
#include "harness/leftovers/leftovers.h"
#include "harness/machine/env.h"
#include "harness/process/interrupt.h"

namespace {

std::string Text(const nlohmann::ordered_json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void AddLoadbenchContext() {
  const std::string dir = loadbench::bench::BenchDir();
  const nlohmann::ordered_json env = loadbench::CollectEnv(dir);
  benchmark::AddCustomContext("loadbench_commit", Text(env["loadbench"]["commit"]));
  benchmark::AddCustomContext("kernel", Text(env["kernel"]["release"]));
  benchmark::AddCustomContext("bench_dir", dir);
  benchmark::AddCustomContext("bench_dir_fs", Text(env["filesystem"]["type"]));
  benchmark::AddCustomContext("thp_enabled", Text(env["thp"]["enabled"]));
  benchmark::AddCustomContext("thp_defrag", Text(env["thp"]["defrag"]));
}

}  // namespace

int main(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // The benchmarks measure: one measurement on the machine at a time, as for loadbench run.
  loadbench::HeldLock machine;
  if (loadbench::Status s = loadbench::BeginMeasurement(
          "loadbench_bench", loadbench::ThisProcess(command_line, ""), true, &machine);
      !s.ok()) {
    fmt::print(stderr, "loadbench_bench: {}\n", s.message());
    return loadbench::Interrupted() ? 130 : 2;
  }
  AddLoadbenchContext();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
