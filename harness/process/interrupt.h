// SIGINT/SIGTERM as a flag that long loops poll, so that they can clean up (remove a
// temporary file, kill a worker, keep finished results) instead of dying half-way.
#pragma once

namespace loadbench {

// Installs the handlers (idempotent). The first signal sets the flag; a second one of the
// same kind restores the default action, so a stuck program can still be killed.
void InstallInterruptHandlers();
bool Interrupted();
// The signal that set the flag, or 0.
int InterruptSignal();

}  // namespace loadbench
