#include "harness/leftovers/leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/machine/tuning.h"
#include "harness/net/netns.h"
#include "harness/process/cgroup.h"
#include "harness/process/child.h"
#include "harness/storage/devices.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"
#include "loaders/strategy/registry.h"

namespace loadbench {
namespace {

// What a journal line that names something this tool never makes gets: said, and left alone
// (the line ignored, the journal removed).
bool LeftAlone(const std::string& what, const std::string& why, std::vector<std::string>* said) {
  said->push_back(fmt::format("did not touch {}: {}", what, why));
  return true;
}

// A cgroup of a killed command: its tasks (workers that outlived it) killed, then removed; only
// one that process made (loadbench-PID-N under the tool's cgroup parent).
bool CleanCgroup(const std::string& dir, const StaleJournal& j, std::vector<std::string>* said) {
  if (!IsCgroupOfProcess(dir, j.pid)) {
    return LeftAlone(
        dir, fmt::format("not a cgroup of loadbench's pid {} (loadbench-{}-N)", j.pid, j.pid),
        said);
  }
  std::ifstream procs(dir + "/cgroup.procs");
  if (!procs) return true;  // gone already
  for (long pid; procs >> pid;) ::kill(static_cast<pid_t>(pid), SIGKILL);
  for (int retry = 0; retry < 50; ++retry) {  // a killed task leaves its group in a moment
    if (::rmdir(dir.c_str()) == 0) {
      said->push_back("memory cgroup " + dir);
      return true;
    }
    if (errno == ENOENT) return true;
    if (errno != EBUSY) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  said->push_back(Status::FromErrno("could not remove memory cgroup " + dir, errno).message());
  return false;
}

// A setting a killed command tuned, written back. Only root can tune, so a journal of another
// owner naming one is not followed (the lock folder is writable by every user).
bool RestoreSetting(const std::string& what, uid_t owner, std::vector<std::string>* said) {
  const size_t tab = what.find('\t');
  const std::string path = what.substr(0, tab),
                    value = tab == what.npos ? "" : what.substr(tab + 1);
  Status s = owner == 0 ? WriteTunableSetting(path, value)
                        : Status::BadInput(fmt::format("{}: in a journal not of root's", path));
  if (s.ok()) {
    said->push_back(fmt::format("setting {} restored to {}", path, value));
    return true;
  }
  said->push_back(fmt::format("could not restore a setting: {}", s.message()));
  return owner != 0;  // a journal that is not root's is removed, its line ignored
}

// The owner of process `pid` (its effective uid, as /proc shows it); -1 when it is gone.
uid_t ProcessOwner(pid_t pid) {
  struct stat st {};
  return ::stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0 ? st.st_uid
                                                                : static_cast<uid_t>(-1);
}

// A process group a killed command started ("PGID\tSTARTTIME"): its processes killed. A pid
// is never handed out again while a process group of that number has a member, so a leader pid
// that names a younger process means that the group ended long ago. A journal not of root's
// may only name its owner's processes.
bool CleanProcessGroup(const std::string& what, uid_t owner, std::vector<std::string>* said) {
  const size_t tab = what.find('\t');
  const pid_t pgid = static_cast<pid_t>(std::strtol(what.c_str(), nullptr, 10));
  const std::string start = tab == what.npos ? "" : what.substr(tab + 1);
  const std::string now = ProcessStartTime(pgid);
  if (pgid <= 1 || (!now.empty() && now != start)) return true;
  int killed = 0;
  for (int retry = 0; retry < 100; ++retry) {
    int left = 0;
    for (const pid_t p : ProcessGroupMembers(pgid)) {
      if (owner != 0 && ProcessOwner(p) != owner) continue;
      ::kill(p, SIGKILL);
      ++left;
    }
    if (retry == 0) killed = left;
    if (left == 0) {
      if (killed > 0) said->push_back(fmt::format("process group {} ({} killed)", pgid, killed));
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  said->push_back(fmt::format("could not kill process group {}: processes left", pgid));
  return false;
}

int RemoveOne(const char* path, const struct stat*, int type, FTW*) {
  return type == FTW_DP ? ::rmdir(path) : ::unlink(path);
}

// Whether `st` is a folder of `owner`'s that no one else may write: a folder of the harness's own
// (made by mkdtemp, 0700) in a place every user may write.
bool OwnFolder(const struct stat& st, uid_t owner) {
  return S_ISDIR(st.st_mode) && st.st_uid == owner && (st.st_mode & 022) == 0;
}

// A folder a killed command made for itself (a server's configuration and logs, a node's
// temporary folder): removed with what it holds, when it is one of the harness's own
// ("loadbench-*", the journal owner's, no one else may write it).
bool RemoveFolder(const std::string& dir, uid_t owner, std::vector<std::string>* said) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    said->push_back(Status::FromErrno("could not remove " + dir, errno).message());
    return false;
  }
  const std::string name = dir.substr(dir.rfind('/') + 1);
  if (!name.starts_with("loadbench-") || !OwnFolder(st, owner)) {
    return LeftAlone(dir, "not a folder of loadbench's own", said);
  }
  if (::nftw(dir.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0) {
    said->push_back("folder " + dir);
    return true;
  }
  said->push_back(Status::FromErrno("could not remove " + dir, errno).message());
  return false;
}

// Whether something is mounted at `dir` (/proc/self/mounts: a dead FUSE mount, which stat and
// statfs cannot reach, is listed there still).
bool MountedAt(const std::string& dir) {
  std::ifstream mounts("/proc/self/mounts");
  for (std::string device, at, rest; mounts >> device >> at && std::getline(mounts, rest);) {
    if (at == dir) return true;
  }
  return false;
}

// A mount a killed command left: a bucket's (its s3fs or rclone died with it, so the mount is
// dead: every access fails with "Transport endpoint is not connected") or a storage's file
// system, alive (its loop device is detached after): detached, then its empty folder removed; by
// root's journal only, and only on a folder of loadbench's own.
bool CleanMount(const std::string& dir, uid_t owner, std::vector<std::string>* said) {
  if (owner != 0 || !dir.starts_with("/tmp/loadbench-") || dir.find('/', 5) != std::string::npos) {
    return LeftAlone(dir, "not a mount point of loadbench's own (/tmp/loadbench-*)", said);
  }
  const bool mounted = MountedAt(dir);
  if (mounted && ::umount2(dir.c_str(), MNT_DETACH) != 0) {
    said->push_back(Status::FromErrno("could not unmount " + dir, errno).message());
    return false;
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    said->push_back(Status::FromErrno("could not remove " + dir, errno).message());
    return false;
  }
  if (mounted) said->push_back("mount " + dir);
  return true;
}

// A storage's loop device a killed command bound ("/dev/loopN\tFILE"): detached, by root's
// journal only, and only while it is bound to FILE still, a file in a folder of loadbench's own
// (/tmp/loadbench-*); one bound to nothing, or to another file since, is not the command's now.
bool CleanLoop(const std::string& what, uid_t owner, std::vector<std::string>* said) {
  const size_t tab = what.find('\t');
  const std::string device = what.substr(0, tab),
                    file = tab == what.npos ? "" : what.substr(tab + 1);
  if (owner != 0 || !IsLoopDeviceName(device) || !file.starts_with("/tmp/loadbench-") ||
      file.find("/../") != std::string::npos) {
    return LeftAlone(what, "not a loop device of loadbench's own (/dev/loopN on /tmp/loadbench-*)",
                     said);
  }
  const std::string bound = LoopBackingFile(device);
  if (bound != file && bound != file + " (deleted)") return true;
  if (Status s = DetachLoop(device); !s.ok()) {
    said->push_back(fmt::format("could not detach {}: {}", device, s.message()));
    return false;
  }
  said->push_back(fmt::format("loop device {} ({})", device, file));
  return true;
}

// A storage's throttling cgroup a killed command made: removed (its tasks ended with it), by
// root's journal only, and only loadbench-PID-N under the io controller's parent.
bool CleanIoCgroup(const std::string& dir, const StaleJournal& j, std::vector<std::string>* said) {
  if (j.owner != 0 || !IsIoCgroupOfProcess(dir, j.pid)) {
    return LeftAlone(dir,
                     fmt::format("not a throttling cgroup of loadbench's pid {} (loadbench-{}-N)",
                                 j.pid, j.pid),
                     said);
  }
  if (::access(dir.c_str(), F_OK) != 0) return true;
  if (Status s = RemoveIoCgroup(dir); !s.ok()) {
    said->push_back(fmt::format("could not remove {}", s.message()));
    return false;
  }
  said->push_back("throttling cgroup " + dir);
  return true;
}

// A link's namespace or device a killed command made ("loadbench-*" namespaces, "lb*" devices):
// deleted, by root's journal only; one that is gone already is clean.
bool CleanNet(Leftover kind, const std::string& name, uid_t owner, std::vector<std::string>* said) {
  const bool netns = kind == Leftover::kNetns;
  const std::string where = netns ? "/run/netns/" + name : "/sys/class/net/" + name;
  const bool ours = netns ? name.starts_with("loadbench-") : name.starts_with("lb");
  if (owner != 0 || !ours || name.find('/') != name.npos) {
    return LeftAlone(name, "not a network namespace or device of loadbench's own", said);
  }
  if (::access(where.c_str(), F_OK) != 0) return true;
  const bool gone = RemoveNet(kind, name);
  said->push_back(gone ? fmt::format("{} {}", netns ? "network namespace" : "network device", name)
                       : fmt::format("could not delete {}", where));
  return gone;
}

// A file a killed command was writing under a temporary name (journal.h TempSibling): removed;
// only a regular file of the journal owner's under that process's temporary name.
bool RemoveTempFile(const std::string& path, const StaleJournal& j,
                    std::vector<std::string>* said) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    said->push_back(Status::FromErrno("could not remove " + path, errno).message());
    return false;
  }
  if (!IsTempSiblingOf(path, j.pid) || !S_ISREG(st.st_mode) || st.st_uid != j.owner) {
    return LeftAlone(
        path, fmt::format("not a file loadbench's pid {} was writing (NAME.tmp.{})", j.pid, j.pid),
        said);
  }
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) {
    said->push_back("partly written file " + path);
    return true;
  }
  said->push_back(Status::FromErrno("could not remove " + path, errno).message());
  return false;
}

// The strategy's cleanup for a file ("NAME\tFILE": shm's segment of that file).
bool CleanStrategy(const std::string& what, std::vector<std::string>* said) {
  const size_t tab = what.find('\t');
  const std::string name = what.substr(0, tab);
  const StrategyInfo* info = FindStrategy(name);
  if (tab == std::string::npos || info == nullptr || info->cleanup == nullptr) return true;
  Status s = info->cleanup(what.substr(tab + 1), said);
  if (s.ok()) return true;
  said->push_back(fmt::format("could not clean up after {}: {}", name, s.message()));
  return false;
}

bool CleanOne(Leftover kind, const std::string& what, const StaleJournal& j,
              std::vector<std::string>* said) {
  switch (kind) {
    case Leftover::kCgroup:
      return CleanCgroup(what, j, said);
    case Leftover::kFile:
      return RemoveTempFile(what, j, said);
    case Leftover::kStrategy:
      return CleanStrategy(what, said);
    case Leftover::kSetting:
      return RestoreSetting(what, j.owner, said);
    case Leftover::kProcess:
      return CleanProcessGroup(what, j.owner, said);
    case Leftover::kFolder:
      return RemoveFolder(what, j.owner, said);
    case Leftover::kMount:
      return CleanMount(what, j.owner, said);
    case Leftover::kNetns:
    case Leftover::kNetDev:
      return CleanNet(kind, what, j.owner, said);
    case Leftover::kLoop:
      return CleanLoop(what, j.owner, said);
    case Leftover::kIoCgroup:
      return CleanIoCgroup(what, j, said);
  }
  return true;
}

}  // namespace

std::vector<std::string> CleanLeftovers(std::vector<std::string>* refused) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  // A cleanup may end processes that journal too (a cluster's ranks, killed with their
  // namespaces, leave their servers' journals): their journals are stale once it is done, and
  // cleaned in a pass of their own.
  for (bool more = true; more;) {
    more = false;
    for (const StaleJournal& j : StaleJournals(seen.empty() ? refused : nullptr)) {
      if (!seen.insert(j.name).second) continue;
      more = true;
      std::vector<std::string> said;
      bool all = true;
      // Undone in the reverse order of their making: a mount before its loop device, a loop
      // device before the folder of its backing file, a process before its mount.
      for (auto it = j.outstanding.rbegin(); it != j.outstanding.rend(); ++it) {
        all = CleanOne(it->first, it->second, j, &said) && all;
      }
      if (all) RemoveJournal(j);
      if (!said.empty()) {
        out.push_back(
            fmt::format("pid {} ended without cleaning up: {}", j.pid, fmt::join(said, "; ")));
      }
    }
  }
  return out;
}

Status BeginMeasurement(const std::string& who, const LockHolder& me, bool wait, HeldLock* lock) {
  LB_RETURN_IF_ERROR(LockMachine(who, me, wait, lock));
  std::vector<std::string> refused;
  for (const std::string& line : CleanLeftovers(&refused)) {
    fmt::print(stderr, "{}: cleaned up: {}\n", who, line);
  }
  for (const std::string& line : refused) {
    fmt::print(stderr,
               "{}: WARNING: {}; what this command makes outside its process is not journaled "
               "(remove what is not loadbench's own there: it makes its folder itself)\n",
               who, line);
  }
  return Status::Ok();
}

}  // namespace loadbench
