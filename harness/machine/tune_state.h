// `loadbench system tune`'s state file: the tune in force and what every setting it changed held
// before, for `system reset` to write back, and for env.json to say that the machine was tuned.
// $LOADBENCH_STATE_DIR/system-state.json, else /run/loadbench/system-state.json: on tmpfs, gone
// at a reboot, as the values it would restore are (the kernel starts from its own).
#pragma once

#include <string>

#include "harness/machine/tuning.h"
#include "loaders/base/status.h"

namespace loadbench {

std::string TuneStatePath();

// The saved tune; *found false when there is none. kBadInput naming the file when it cannot be
// read, is not JSON of this shape, is not root's (or this user's), is writable by others, or
// names a setting that tune does not write.
Status LoadTuneState(TuneRecord* out, bool* found);

// Written under a temporary name and renamed, so that it is the old file or the new, whole.
Status SaveTuneState(const TuneRecord& r);

Status RemoveTuneState();

}  // namespace loadbench
