// What ended commands left outside their processes (process/journal.h), cleaned: by every
// measuring command first, before it takes a measurement, and said on stderr.
#pragma once

#include <string>
#include <vector>

#include "harness/process/journal.h"
#include "harness/process/locks.h"
#include "loaders/base/status.h"

namespace loadbench {

// Cleans what the journals of this user's processes that no longer run list, and removes those
// journals. A line is followed only when it names something this tool makes (journal.h's
// Leftover says what each kind may name); anything else is left alone and said. Returns one
// line per journal: each thing cleaned ("memory cgroup /sys/fs/..."), left alone ("did not
// touch ...: why") or that could not be ("could not remove ...: reason"). `refused` (when
// given) gets a line for a journal folder or journal that is not this user's own, left unread.
std::vector<std::string> CleanLeftovers(std::vector<std::string>* refused = nullptr);

// What every measuring command does first: the machine lock (LockMachine), then whatever an
// ended command left, cleaned and said on stderr after `who`.
Status BeginMeasurement(const std::string& who, const LockHolder& me, bool wait, HeldLock* lock);

}  // namespace loadbench
