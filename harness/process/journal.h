// What a command makes outside its own process (a memory cgroup, a strategy's shared-memory
// segment, a file being written under a temporary name, a server it started and the folder it
// runs in, a link's namespace) is written into a journal before it is made and struck off once
// it is gone. A command killed by a signal it cannot catch leaves its journal behind; the next
// command that measures cleans what the journal lists (harness/leftovers/leftovers.h).
//
// The journals are files in <lock folder>/leftovers-UID/, one per process, named by its pid and
// start time, so a journal of a process that still runs is never taken for a stale one. The lock
// folder is writable by every user, so the journal folder is each user's own: made 0700, and
// read or written only when it is a folder (not a symbolic link) owned by this process's
// effective uid with no access for anyone else, each journal in it only when it is a regular
// file of that owner that no one else may write. A command cleans only its own user's journals:
// root's, root's alone.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

// What a journal line names, and how it is cleaned. A line is followed only when it names
// something of the kind this tool makes, as each says; anything else is left alone, and said.
enum class Leftover {
  kCgroup,    // a memory cgroup (process/cgroup.h: loadbench-PID-N under the tool's cgroup
              // parent, PID the journal's): its tasks killed, then removed
  kFile,      // a file written under a temporary name (TempSibling, the journal's PID), a
              // regular file of the journal owner's: removed
  kStrategy,  // "NAME\tFILE": the strategy's cleanup for FILE (shm: its segment)
  kSetting,   // "PATH\tVALUE": a kernel setting tuned (harness/machine/tuning.h): VALUE, what it
              // held before, written back; only a setting tune writes, from a journal of root's
  kProcess,   // "PGID\tSTARTTIME": a process group started on purpose (a server), the start time
              // (/proc/PID/stat field 22) of its first process: every process of the group is
              // killed, unless that pid names another process now; only the journal owner's,
              // unless the journal is root's
  kFolder,    // a folder of the harness's own ("loadbench-*", the journal owner's, writable by
              // no one else): removed with all it holds, symbolic links not followed
  kNetns,     // a network namespace of a link or a cluster ("loadbench-*"): deleted (`ip netns
              // del`); only from a journal of root's
  kNetDev,    // a network device of a link in this namespace ("lb*": a veth end, an IFB
              // device): deleted (`ip link del`); only from a journal of root's
  kMount,     // a mount on a folder of the harness's own (/tmp/loadbench-*: an s3fs mount of a
              // bucket, which a killed command leaves dead; a storage's file system, image,
              // overlay, tmpfs or rclone mount, harness/storage/storage.h): detached, its folder
              // removed; only from a journal of root's
  kLoop,      // "/dev/loopN\tFILE": a storage's loop device bound to FILE, a backing file or image
              // in a folder of the harness's own (/tmp/loadbench-*): detached, only while it is
              // still bound to FILE; only from a journal of root's
  kIoCgroup,  // a storage's throttling cgroup (loadbench-PID-N under the blkio or io
              // controller's parent, PID the journal's, harness/storage/devices.h): removed;
              // only from a journal of root's
};

// Into this process's journal, before `what` is made. Paths are made absolute. Does nothing
// where no journal folder of this user's can be had (the command runs, unguarded; the next
// measuring command says why: StaleJournals' `refused`).
void TrackLeftover(Leftover kind, const std::string& what);
// Out of the journal, once `what` is gone (or was never made); the journal goes with its last
// line.
void UntrackLeftover(Leftover kind, const std::string& what);

// What a journal lists, in the order it was made.
using JournalLines = std::vector<std::pair<Leftover, std::string>>;

// A journal a process that no longer runs left: the things it still lists.
struct StaleJournal {
  std::string name;  // PID-STARTTIME, in the journal folder
  long pid = 0;
  uid_t owner = static_cast<uid_t>(-1);  // the journal file's owner: this process's euid
  JournalLines outstanding;
};
// Every such journal in this user's journal folder. A folder or a journal that is not this
// user's own as above is left unread, and `refused` (when given) gets a line naming it and why.
std::vector<StaleJournal> StaleJournals(std::vector<std::string>* refused = nullptr);
// Removes a stale journal, once what it lists is clean.
void RemoveJournal(const StaleJournal& journal);

// What the journal of process `pid`, which still runs, lists now; empty when it has none (or
// none that is this user's own). The way a command started by a loadbench command (netns-exec,
// a cluster's rank) checks that what it is asked to use is what that command made.
JournalLines JournalOf(long pid);

// The nearest process above this one (its parent, its parent's, ...) whose journal lists
// (kind, what): all its journal lists, or nothing when none does. How a command that a
// loadbench command started (netns-exec under mpirun) checks that what it is asked to use was
// made by that command.
JournalLines AncestorJournalListing(Leftover kind, const std::string& what);
// The same of any process of this user's that still runs: how a process that a launcher started
// apart from the command (a cluster's rank, whose daemon mpirun detaches) checks that what it
// is told it runs on was made by a loadbench command that is still running.
JournalLines RunningJournalListing(Leftover kind, const std::string& what);

// A folder of this process's own in /tmp, /tmp/PREFIX-XXXXXX (mkdtemp: 0700, a name no one can
// guess), journaled (kFolder) as soon as it is made; PREFIX starts with "loadbench-".
Status MakeJournaledFolder(const std::string& prefix, std::string* dir);
// Such a folder removed with all it holds (symbolic links not followed), then struck off;
// kIOError naming it when it cannot be (it stays journaled, for the next measuring command).
Status RemoveJournaledFolder(const std::string& dir);

// The name a file is written under before it is renamed into place (or removed): PATH.tmp.PID,
// this process's pid. A journal's `file` line is followed only for such a name of the journal's
// own process.
std::string TempSibling(const std::string& path);
bool IsTempSiblingOf(const std::string& path, long pid);

// The processes of process group `pgid` that still run (zombies, which cannot be killed and
// hold nothing but their exit status, left out).
std::vector<pid_t> ProcessGroupMembers(pid_t pgid);

// The start time of process `pid` (clock ticks since boot, /proc/PID/stat field 22): with the
// pid, it names one process for good. "" when there is no such process.
std::string ProcessStartTime(pid_t pid);

}  // namespace loadbench
