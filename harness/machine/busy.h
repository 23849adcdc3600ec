// The machine's own counters of how busy it is, read from /proc and /sys: the CPU time of all
// CPUs together, the tasks that are runnable, the I/Os in flight at the disks. The stability
// check (stability.h) samples them over a window to tell a quiet machine from a busy one,
// whatever made it busy, even work too short-lived to be seen as a process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace loadbench {

// The "cpu" line of proc_dir/stat, in clock ticks summed over every CPU: `busy` is user, nice,
// system, irq and softirq (guest time is inside user); `total` adds idle, iowait and steal.
struct CpuTimes {
  uint64_t busy = 0;
  uint64_t total = 0;
};
std::optional<CpuTimes> ReadCpuTimes(const std::string& proc_dir);

// procs_running of proc_dir/stat: the tasks running or waiting for a CPU now, the reader
// included.
std::optional<int64_t> ReadProcsRunning(const std::string& proc_dir);

// The I/Os in flight now at the machine's disks: the "in progress" field of proc_dir/diskstats
// summed over the devices that are disks in sys_dir/block (partitions would count twice; loop,
// ram and zram devices are memory or files, their I/O lands on a disk too). nullopt when
// diskstats cannot be read.
std::optional<int64_t> ReadIoInFlight(const std::string& proc_dir, const std::string& sys_dir);

}  // namespace loadbench
