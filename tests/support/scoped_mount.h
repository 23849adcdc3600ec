// Test support: a filesystem mounted on a fresh temporary directory for the life of the object,
// for tests that need a filesystem with other properties than the work disk (ramfs refuses
// O_DIRECT). Needs root; ok() is false, with the reason in why(), where mounting is refused.
#pragma once

#include <string>

#include "tests/support/wlf_fixture.h"

namespace loadbench::test {

class ScopedMount final {
 public:
  explicit ScopedMount(const std::string& fstype);  // "ramfs", "tmpfs"
  ~ScopedMount();                                   // detaches the mount, then the directory goes
  ScopedMount(const ScopedMount&) = delete;
  ScopedMount& operator=(const ScopedMount&) = delete;

  bool ok() const { return mounted_; }
  const std::string& why() const { return why_; }
  std::string File(const std::string& name) const { return dir_.File(name); }

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace loadbench::test
