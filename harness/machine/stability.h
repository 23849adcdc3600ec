// The stability check made before runs: whether this machine is quiet enough for the numbers
// to mean something, measured rather than guessed. It samples the machine for a window (the
// CPU time others use, runnable tasks, I/O in flight, dirty pages), waits for work that just
// ended to settle when it is busy, and warns only when it is still busy after the wait, naming
// what is; it also looks at memory, swap and khugepaged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace loadbench {

// How long a window lasts by default: 0.5 s, or LOADBENCH_SETTLE_WINDOW_S (0.05 to 5 s) where
// set, as the test suite sets it so that its hundreds of commands do not each spend half a
// second sampling.
double DefaultWindowSeconds();

struct StabilityOptions {
  double window_s = DefaultWindowSeconds();  // each sample's length; CPU figures null unless > 0
  double max_wait_s = 0;           // how long a busy machine is waited for; 0: one window, no wait
  uint64_t file_bytes = 0;         // the file to be loaded, 0 when unknown (for the memory warning)
  std::string proc_dir = "/proc";  // roots, so tests can give fake trees
  std::string sys_dir = "/sys";
  int self_pid = 0;  // 0: getpid(); this process and its descendants are loadbench's own work,
                     // not "other work"
  // While it waits: called after the first busy window and then every 10 s, with the seconds
  // waited so far and what is busy (a phrase). Empty: wait silently.
  std::function<void(double waited_s, const std::string& busy)> on_wait;
  // Called in every window after its sleep, before its second sample: lets a test change a
  // fake tree between the two samples. Empty in normal use.
  std::function<void()> between_samples;
};

// Samples the machine, waits while it is busy (up to max_wait_s), and returns env.json's
// `stability` object:
//   {"window_s", "max_wait_s", "waited_s", "settled", "waited_for", "busy": {"cpu_percent",
//    "runnable", "io_in_flight"}, "loadavg": [1m, 5m, 15m], "cores", "busy_processes": [{"pid",
//    "comm", "cpu_percent"}], "dirty_bytes", "writeback_bytes", "mem_available_bytes",
//    "mem_total_bytes", "swap_total_bytes", "swap_used_bytes", "khugepaged": {"pages_collapsed",
//    "full_scans", "pages_collapsed_delta", "full_scans_delta", "cpu_percent"}, "warnings"}
// The figures are the last window's. A window is busy when other work (every CPU's busy time in
// proc_dir/stat less the ticks of self and its descendants) took 25% of one CPU or more, when
// one I/O or more was in flight on average, or when dirty and writeback pages stay above
// 64 MiB. `waited_s` is the time before the last window (0: quiet at once), `settled` whether
// that window was quiet, `waited_for` what the first busy one saw (null when none was).
// `warnings`: one short sentence each, saying what was seen and why it matters for the
// numbers; a busy machine only when it did not settle. The load average is recorded, not
// judged: it lags by a minute, and loadbench's own build or last experiment raises it.
// A figure the machine cannot give is null. CPU percentages are of one CPU; a process's are
// its utime + stime ticks of /proc/PID/stat over the window, whole processes, threads
// included. `cores` counts the "processor" lines of proc_dir/cpuinfo, or is
// sysconf(_SC_NPROCESSORS_ONLN) where that file has none. Never throws for an unreadable or
// malformed file: the figure is null and the rest goes on.
nlohmann::ordered_json CheckStability(const StabilityOptions& o);

// What the harness settles itself before the runs instead of warning about it: dirty and
// writeback pages above the warning's threshold (64 MiB) are written back with sync(2), which
// returns once they are on the device. Returns {"bytes" (dirty and writeback before),
// "seconds" (the sync's)}, or null when there were fewer (or meminfo cannot be read).
nlohmann::ordered_json SyncDirtyPages(const std::string& proc_dir = "/proc");

}  // namespace loadbench
