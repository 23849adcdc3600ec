// One measurement per machine, one writer per results folder (docs/design.md, "One at a
// time"). Both are flock(2) locks on a file: the kernel drops them with the process that held
// them, so a holder killed by any signal, or a power loss, never blocks the next one. The holder
// writes who it is into the file, for whoever finds it taken.
#pragma once

#include <string>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

// Who holds a lock, as the holder wrote it.
struct LockHolder {
  long pid = 0;
  std::string command;  // its command line
  std::string out_dir;  // its results folder, "" when it writes none
  std::string since;    // UTC, "YYYY-MM-DD HH:MM:SS"
  // "pid 123 (`loadbench experiment e.toml --out r`, results in r, since 2026-12-01 10:42:45
  // UTC)"; "an unknown process" when the holder has not written itself yet.
  std::string Describe() const;
};

// This process, started now, writing into `out_dir` ("" for none).
LockHolder ThisProcess(const std::string& command_line, const std::string& out_dir);

// A lock this process holds; released (and its file removed) when destroyed. A lock inherited
// from the parent (`loadbench lock`) is left to the parent.
class HeldLock final {
 public:
  HeldLock() = default;
  HeldLock(HeldLock&&) = default;
  HeldLock& operator=(HeldLock&&) = default;
  ~HeldLock() { Release(); }
  bool held() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  bool inherited() const { return inherited_; }
  void Release();
  // For the functions below: `fd` holds the lock on the file at `path`.
  void Hold(UniqueFd fd, std::string path, bool inherited);

 private:
  UniqueFd fd_;
  std::string path_;
  bool inherited_ = false;
};

// Where the machine lock and the journals of leftovers live: $LOADBENCH_LOCK_DIR, else
// /run/lock/loadbench, else /tmp/loadbench-lock (created, writable by every user).
Status LockDir(std::string* dir);

// Takes the lock file at `path` (created if missing) without waiting. Held: *lock holds it and
// the file names `me`. Taken by another process: *lock stays empty and *other says who.
Status TryLock(const std::string& path, const LockHolder& me, HeldLock* lock, LockHolder* other);

// The machine-wide measurement lock, for every command that measures. Taken by another
// process: with `wait`, says for whom on stderr after `who` and polls until it is free (a
// holder that changes is named again); Ctrl-C stops waiting (kFailed, Interrupted() set).
// Without `wait`, kBadInput naming the holder. A lock this process inherited from `loadbench
// lock` is adopted at once.
Status LockMachine(const std::string& who, const LockHolder& me, bool wait, HeldLock* lock);

// The results folder `dir` (which must exist) for one writer: never waits; kBadInput naming the
// holder when another process writes there.
Status LockResultsFolder(const std::string& dir, const LockHolder& me, HeldLock* lock);

// For `loadbench lock`: the held machine lock passes to the command it starts (its descriptor
// inheritable, named by LOADBENCH_LOCK_FD), so that the loadbench commands inside it measure
// under it instead of waiting for it.
Status PassMachineLockToChildren(const HeldLock& lock);

// For a command whose measurement runs in processes that a launcher starts without its
// descriptors (mpirun closes them: a [cluster]'s ranks, harness/run/cluster_run.h): the held
// machine lock lent by name to every process below this one, LOADBENCH_LOCK_HOLDER=PID-START
// (this process, its start time). LockMachine in a process below it, or in a network namespace
// its journal lists (a rank, whose daemon mpirun detaches from the command), adopts the lock
// while it or a process above it holds it, as the kernel says (/proc/locks), without taking it;
// anywhere else the variable is ignored.
Status LendMachineLock(const HeldLock& lock);
inline constexpr const char* kLockHolderVar = "LOADBENCH_LOCK_HOLDER";

}  // namespace loadbench
