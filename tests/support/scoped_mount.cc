#include "tests/support/scoped_mount.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loadbench::test {

ScopedMount::ScopedMount(const std::string& fstype) {
  if (::geteuid() != 0) {
    why_ = "mounting " + fstype + " needs root";
    return;
  }
  if (::mount(fstype.c_str(), dir_.path().c_str(), fstype.c_str(), MS_NOSUID | MS_NODEV, nullptr) !=
      0) {
    why_ = "mount " + fstype + " on " + dir_.path() + ": " + std::strerror(errno);
    return;
  }
  mounted_ = true;
}

ScopedMount::~ScopedMount() {
  if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
}

}  // namespace loadbench::test
