#include "harness/run/session.h"

#include <signal.h>
#include <unistd.h>

#include <climits>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "harness/machine/counters.h"
#include "harness/measure/host.h"
#include "harness/probe/probe.h"
#include "harness/process/cgroup.h"
#include "harness/process/interrupt.h"

namespace loadbench {

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "loadbench";
  return std::string(buf, static_cast<size_t>(n));
}

void AddMeasurementEnv(const std::string& file, const std::vector<std::string>& counters,
                       double sample_ms, nlohmann::ordered_json* env) {
  const bool whole = DropsWholeCache();
  // The machine's ceilings, to read every figure against: the last full probe of this boot,
  // else the quick memory-only one of this boot (made now, before any cold run, if none is
  // kept).
  (*env)["probe"] = ProbeForRun(file);
  (*env)["cache_control"] = {
      {"drop_method", whole ? "drop_caches" : "fadvise"},
      {"residency_method", ResidencyMethod()},
      {"note", whole ? "sync; echo 3 > /proc/sys/vm/drop_caches before every cold run"
               : ::geteuid() == 0
                   ? "LOADBENCH_NO_DROP_CACHES: cold runs drop their files' pages alone, with "
                     "posix_fadvise(POSIX_FADV_DONTNEED); residency is still checked"
                   : "not root: /proc/sys/vm/drop_caches is not writable, so cold runs rely on "
                     "posix_fadvise(POSIX_FADV_DONTNEED) on the file; residency is still checked"}};
  // Which counters count here, and why the others read null in every run: said once, here.
  (*env)["counters"] = CounterAvailability(counters);
  (*env)["timeline"] = {{"interval_ms", sample_ms},
                        {"residency_method", ResidencyMethod()},
                        {"sources", "/proc/PID/status (RSS by kind), /proc/PID/io (bytes read), "
                                    "/proc/PID/stat (faults), the file's page-cache residency"}};
  const std::string why = MemoryCgroupUnsupportedReason();
  (*env)["memory_cgroup"] = why.empty()
                                ? nlohmann::ordered_json{{"supported", true}}
                                : nlohmann::ordered_json{{"supported", false}, {"reason", why}};
}

void StartSession(RunSession* rs) {
  InstallInterruptHandlers();
  // A worker that dies before its go byte must cost a failed write, not the runner.
  ::signal(SIGPIPE, SIG_IGN);
  rs->measure.exe = SelfExe();
  rs->root = ::geteuid() == 0;
  rs->reporter.stamp = NowStamp("%Y%m%dT%H%M%S");
}

void CleanupStrategies(const std::vector<StrategySpec>& specs, const std::string& file,
                       const std::string& who) {
  for (const StrategySpec& spec : specs) {
    if (const StrategyInfo* info = FindStrategy(spec.name)) (void)CleanUpAfter(*info, file, who);
  }
}

}  // namespace loadbench
