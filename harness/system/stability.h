// The stability check made before runs: whether this machine is quiet enough for the numbers
// to mean something (other busy processes, load, dirty pages, memory and swap, khugepaged).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace loadbench {

struct StabilityOptions {
  double window_s = 1.0;           // how long CPU use and khugepaged activity are sampled; CPU
                                   // figures are null unless it is > 0
  uint64_t file_bytes = 0;         // the file to be loaded, 0 when unknown (for the memory warning)
  std::string proc_dir = "/proc";  // roots, so tests can give fake trees
  std::string sys_dir = "/sys";
  int self_pid = 0;  // 0: getpid(); this process and its children are not
                     // "other busy processes"
  // Called once after the window's sleep, before the second sample: lets a test change a fake
  // tree between the two samples. Empty in normal use.
  std::function<void()> between_samples;
};

// Samples the machine and returns env.json's `stability` object:
//   {"window_s", "loadavg": [1m, 5m, 15m], "cores", "busy_processes": [{"pid", "comm",
//    "cpu_percent"}], "dirty_bytes", "writeback_bytes", "mem_available_bytes",
//    "mem_total_bytes", "swap_total_bytes", "swap_used_bytes", "khugepaged": {"pages_collapsed",
//    "full_scans", "pages_collapsed_delta", "full_scans_delta", "cpu_percent"}, "warnings"}
// with `warnings`: one short sentence each, saying what was seen and why it matters for the
// numbers. Blocks for window_s. A figure the machine cannot give is null (loadavg as a whole;
// busy_processes when proc_dir cannot be listed). CPU percentages are of one CPU over
// window_s (utime + stime ticks of /proc/PID/stat, whole processes, threads included); a
// process that exits during the window is not seen. `cores` counts the "processor" lines of
// proc_dir/cpuinfo, or is sysconf(_SC_NPROCESSORS_ONLN) where that file has none. Never
// throws for an unreadable or malformed file: the figure is null and the rest goes on.
nlohmann::ordered_json CheckStability(const StabilityOptions& o);

// What the harness settles itself before the runs instead of warning about it: dirty and
// writeback pages above the warning's threshold (64 MiB) are written back with sync(2), which
// returns once they are on the device. Returns {"bytes" (dirty and writeback before),
// "seconds" (the sync's)}, or null when there were fewer (or meminfo cannot be read).
nlohmann::ordered_json SyncDirtyPages(const std::string& proc_dir = "/proc");

}  // namespace loadbench
