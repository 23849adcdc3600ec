// Performance counters of one load, named by libpfm4 event strings ("perf::PAGE-FAULTS",
// "CYCLES"). The worker opens them on itself, disabled, with inherit set so that threads it
// starts are counted too, enables them where the timed region starts and disables them where it
// ends: the counts cover the load and nothing else (not the worker's start-up, not the result
// write-out). A counter the machine cannot count reads as null with a reason, never as zero.
#pragma once

#include <linux/perf_event.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

// The default set: the software events every Linux kernel counts, then the hardware events
// that need a PMU (a virtual machine often has none).
const std::vector<std::string>& DefaultCounterNames();

// Splits a --counters list ("perf::PAGE-FAULTS,CYCLES"); "default" expands to the default set
// and "none" to nothing. BadInput for an event libpfm4 does not know, naming it.
Status ParseCounterList(const std::string& text, std::vector<std::string>* names);

class CounterSet {
 public:
  // Encodes and opens every event on the calling process. Events that cannot be opened are kept
  // with the reason; Open itself fails only for a name libpfm4 cannot encode.
  Status Open(const std::vector<std::string>& names);
  void Enable();
  void Disable();
  // Name to count (scaled by time_enabled / time_running when the kernel multiplexed the
  // event), null where the event could not be opened or never ran. `scaled`, when given,
  // gets the names whose counts were scaled.
  nlohmann::ordered_json Read(std::vector<std::string>* scaled = nullptr) const;
  // Name to why it is null; empty when every event counts.
  nlohmann::ordered_json Unavailable() const;
  // Name to "user+kernel" or "user" (where perf_event_paranoid keeps the kernel side out).
  nlohmann::ordered_json Scope() const;

 private:
  struct Counter {
    std::string name;
    UniqueFd fd;
    std::string error;  // why fd is not open
    bool kernel = false;
  };
  std::vector<Counter> counters_;
};

// Opens each event once on this process and reports, for env.json, which count here and why
// the others do not: {"requested": [...], "unavailable": {name: reason}, "scope": {...},
// "perf_event_paranoid": N}.
nlohmann::ordered_json CounterAvailability(const std::vector<std::string>& names);

}  // namespace loadbench
