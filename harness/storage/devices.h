// The loop devices and the throttling cgroups a storage makes (storage.h), as the storage
// makes and removes them and as the cleanup of a killed command's leftovers checks and removes
// them (leftovers/leftovers.h): a loop device only while it is still bound to the file the
// journal names, a cgroup only loadbench-PID-N under the io controller's parent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

// A free loop device now ("/dev/loop7", made by the kernel's loop-control when none is free).
Status FreeLoopDevice(std::string* device);
// `file` bound to `device` with direct I/O (so that the host's page cache holds none of it),
// read-only when asked: losetup. kIOError with losetup's words.
Status AttachLoop(const std::string& device, const std::string& file, bool read_only);
// The device's binding ended (LOOP_CLR_FD; a device still open elsewhere is detached when it is
// closed). A device bound to nothing is done already.
Status DetachLoop(const std::string& device);
// The file bound to "/dev/loopN" as the kernel names it (/sys/block/loopN/loop/backing_file,
// " (deleted)" after it when it was removed); "" when it is bound to none.
std::string LoopBackingFile(const std::string& device);
// Whether `device` is /dev/loopN.
bool IsLoopDeviceName(const std::string& device);
// A value of /sys/block/NAME/ (NAME "loop3", `file` "loop/dio", "queue/read_ahead_kb"); nullopt
// when it cannot be read.
std::optional<uint64_t> BlockValue(const std::string& name, const std::string& file);

// The throttling cgroups' parent: where v2's io controller is (its root), else this process's
// own group in the v1 blkio hierarchy. kUnsupported saying why there is none.
Status IoCgroupParent(std::string* parent, bool* v2);
// Whether `path` names a throttling group process `pid` makes here: loadbench-PID-N under
// IoCgroupParent.
bool IsIoCgroupOfProcess(const std::string& path, long pid);
// Such a group removed (retried a moment while its last tasks leave it); one gone is done.
Status RemoveIoCgroup(const std::string& path);

}  // namespace loadbench
