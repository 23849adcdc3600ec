// The exec strategy's own cost: what the runner adds to a command, from fork to reaped, beyond
// the command's wall time (exec to exit). /bin/true does nearly nothing, so nearly all of a run
// is the runner's: starting the command in its process group (and cgroup), watching it, finding
// and killing what it left, reaping it. The same with no cgroup shows what joining one costs.
#include <benchmark/benchmark.h>

#include <memory>

#include "harness/launch/command.h"
#include "harness/process/cgroup.h"

namespace loadbench {
namespace {

void RunTrue(benchmark::State& state, bool cgroup, double sample_s) {
  ExecRequest req;
  req.program = "/bin/true";
  req.argv = {"/bin/true"};
  req.sample_s = sample_s;
  req.file_paths = {"/bin/true"};
  std::unique_ptr<MemoryCgroup> cg;
  if (cgroup) {
    if (Status s = MemoryCgroup::Create(0, &cg); !s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    req.cgroup_procs = cg->procs_path();
    req.cgroup_dir = cg->path();
  }
  double overhead = 0, wall = 0;
  for (auto _ : state) {
    bool interrupted = false;
    const ExecOutcome o = RunCommand(req, &interrupted);
    if (!o.error.empty() || interrupted) {
      state.SkipWithError(o.error.c_str());
      return;
    }
    state.SetIterationTime(o.process_s);
    overhead += o.process_s - o.wall_s;
    wall += o.wall_s;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["harness_ms"] = overhead / n * 1e3;  // fork to reaped, minus the wall time
  state.counters["command_wall_ms"] = wall / n * 1e3;
}

// As a run makes it: in a cgroup, its timeline sampled every 10 ms.
void BM_ExecTrue(benchmark::State& state) { RunTrue(state, true, 0.010); }
void BM_ExecTrueNoCgroup(benchmark::State& state) { RunTrue(state, false, 0.010); }
void BM_ExecTrueNoTimeline(benchmark::State& state) { RunTrue(state, true, 0); }

BENCHMARK(BM_ExecTrue)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExecTrueNoCgroup)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExecTrueNoTimeline)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loadbench
