// What the machine under test allows, for tests that skip with the reason where it does not.
#pragma once

#include <unistd.h>

#include <string>

namespace loadbench::test {

// Why this process cannot drop the page cache with drop_caches (not root; a read-only /proc/sys,
// as in many containers); empty when it can. The harness then falls back to fadvise.
inline std::string CannotDropCachesReason() {
  if (::geteuid() != 0) return "not root: drop_caches needs root";
  if (::access("/proc/sys/vm/drop_caches", W_OK) != 0) {
    return "/proc/sys/vm/drop_caches is not writable here (a read-only /proc/sys)";
  }
  return "";
}

}  // namespace loadbench::test
