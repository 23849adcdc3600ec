// DAMON, the kernel's data access monitor, as a part of the machine's state
// (harness/machine/tuning.h): a kdamond that runs a `pageout` scheme, or the DAMON_RECLAIM
// module, pages out memory that has not been accessed for a while, page cache included, with no
// memory pressure at all. A warm run's file can leave the cache between the harness's read and
// the load, or during the load; `system show` lists every kdamond with what it does, and `system
// tune` stops those that page out (restored by `system reset` or at the experiment's end).
#pragma once

#include <string>
#include <vector>

#include "harness/machine/tuning.h"

namespace loadbench {

// A line per kdamond ("damon.kdamond0": its state, with its operations and schemes as the note),
// and DAMON_RECLAIM's `enabled` where the module is there; one "damon" line, without a value,
// where this kernel has no DAMON sysfs interface.
void DamonSettings(const SystemRoot& root, std::vector<SystemSetting>* out);

// "on" (some kdamond or DAMON_RECLAIM pages memory out now), "off" (none does) or "absent"
// (neither DAMON's sysfs interface nor DAMON_RECLAIM is in this kernel).
std::string DamonPageoutState(const SystemRoot& root);

// The changes that stop every running kdamond with a pageout scheme, and DAMON_RECLAIM.
void PlanDamon(const SystemRoot& root, std::vector<SettingChange>* plan);

// Whether `path` (under the real /sys) is a setting PlanDamon writes and `value` one it may hold.
bool IsDamonSetting(const std::string& path, const std::string& value);

}  // namespace loadbench
