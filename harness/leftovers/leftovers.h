// What ended commands left outside their processes (process/journal.h), cleaned: by every
// measuring command first, before it takes a measurement, and said on stderr.
#pragma once

#include <string>
#include <vector>

#include "harness/process/journal.h"
#include "harness/process/locks.h"
#include "loaders/base/status.h"

namespace loadbench {

// Cleans what the journals of processes that no longer run list, and removes those journals.
// Returns one line per thing cleaned ("memory cgroup /sys/fs/...") and per thing that could not
// be ("could not remove ...: reason").
std::vector<std::string> CleanLeftovers();

// What every measuring command does first: the machine lock (LockMachine), then whatever an
// ended command left, cleaned and said on stderr after `who`.
Status BeginMeasurement(const std::string& who, const LockHolder& me, bool wait, HeldLock* lock);

}  // namespace loadbench
