#include "harness/process/interrupt.h"

#include <signal.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace loadbench {
namespace {

// Written from a signal handler: a lock-free atomic is async-signal-safe, a mutex is not.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the interrupt flag must be lock-free");

extern "C" void OnInterrupt(int sig) {
  // Keep the first signal; a later one of the other kind does not overwrite it.
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig, std::memory_order_relaxed);
  // SA_RESETHAND has already restored the default action for `sig`, so a second signal of
  // the same kind terminates the process as usual.
}

std::once_flag g_installed;

void InstallOne(int sig) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  // SA_RESETHAND: one-shot; the next delivery of `sig` gets SIG_DFL.
  // SA_RESTART: blocking calls that the program does not expect to fail with EINTR (stdio,
  // waitpid) carry on; loops see the flag at their next poll.
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

}  // namespace

void InstallInterruptHandlers() {
  std::call_once(g_installed, [] {
    InstallOne(SIGINT);
    InstallOne(SIGTERM);
  });
}

bool Interrupted() { return g_signal.load(std::memory_order_relaxed) != 0; }

int InterruptSignal() { return g_signal.load(std::memory_order_relaxed); }

}  // namespace loadbench
