// Settling the machine's memory before a command's first run.
//
// On a virtual machine the first touch of a page the host has not backed costs a host fault
// (microseconds a page), and free page reporting hands freed blocks back to the host, so
// memory that sat free before a command is unbacked again. A command's first run would pay
// that for its page cache and its buffers, where the runs after it, back to back, reuse what
// the run before freed: the first run of a command is slower than the rest for a reason that
// is not the strategy's. Touching as much new memory as a run uses and giving it back just
// before the first run starts it from the state the others start from.
#pragma once

#include <cstdint>
#include <string>

namespace loadbench {

struct Settled {
  uint64_t bytes = 0;  // touched and given back
  double seconds = 0;  // the touch's wall time
};

// What a run of a model of `file_bytes` uses at most: its page cache and one copy; capped at
// MemAvailable (proc_dir/meminfo) less 1 GiB, 0 when that leaves nothing (or it is unknown).
uint64_t SettleBytes(uint64_t file_bytes, const std::string& proc_dir = "/proc");

// Maps `bytes` of anonymous memory, writes one byte a page, unmaps it. Nothing when the map
// fails (the first run then starts as it would have).
Settled SettleMemory(uint64_t bytes);

}  // namespace loadbench
