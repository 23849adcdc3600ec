// What a command makes outside its own process (a memory cgroup, a strategy's shared-memory
// segment, a file being written under a temporary name, a server it started and the folder it
// runs in, a link's namespace) is written into a journal before it is made and struck off once
// it is gone. A command killed by a signal it cannot catch leaves its journal behind; the next
// command that measures cleans what the journal lists (harness/leftovers/leftovers.h).
//
// The journals are files in <lock folder>/leftovers/, one per process, named by its pid and
// start time, so a journal of a process that still runs is never taken for a stale one.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace loadbench {

// What a journal line names, and how it is cleaned.
enum class Leftover {
  kCgroup,    // a cgroup directory: its tasks killed, then removed
  kFile,      // a file: removed
  kStrategy,  // "NAME\tFILE": the strategy's cleanup for FILE (shm: its segment)
  kSetting,   // "PATH\tVALUE": a kernel setting tuned (harness/machine/tuning.h): VALUE, what it
              // held before, written back; only a setting tune writes, from a journal of root's
  kProcess,   // "PGID\tSTARTTIME": a process group started on purpose (a server), the start time
              // (/proc/PID/stat field 22) of its first process: every process of the group is
              // killed, unless that pid names another process now; only the journal owner's,
              // unless the journal is root's
  kFolder,    // a folder of the harness's own ("loadbench-*", the journal owner's): removed with
              // all it holds, symbolic links not followed
  kNetns,     // a network namespace of a link (harness/net/link.h, "loadbench-*"): deleted
              // (`ip netns del`); only from a journal of root's
  kNetDev,    // a network device of a link in this namespace ("lb*": a veth end, an IFB
              // device): deleted (`ip link del`); only from a journal of root's
  kMount,     // a FUSE mount of a bucket on a folder of the harness's own ("loadbench-*": an s3fs
              // mount, which a killed command leaves dead): detached, its folder removed; only
              // from a journal of root's
};

// Into this process's journal, before `what` is made. Paths are made absolute. Does nothing
// where no lock folder can be written (the command runs, unguarded).
void TrackLeftover(Leftover kind, const std::string& what);
// Out of the journal, once `what` is gone (or was never made); the journal goes with its last
// line.
void UntrackLeftover(Leftover kind, const std::string& what);

// A journal a process that no longer runs left: the things it still lists, in the order they were
// made.
struct StaleJournal {
  std::string path;
  long pid = 0;
  uid_t owner = static_cast<uid_t>(-1);  // the journal file's owner
  std::vector<std::pair<Leftover, std::string>> outstanding;
};
// Every such journal in the journal folder.
std::vector<StaleJournal> StaleJournals();

// The processes of process group `pgid` that still run (zombies, which cannot be killed and
// hold nothing but their exit status, left out).
std::vector<pid_t> ProcessGroupMembers(pid_t pgid);

// The start time of process `pid` (clock ticks since boot, /proc/PID/stat field 22): with the
// pid, it names one process for good. "" when there is no such process.
std::string ProcessStartTime(pid_t pid);

}  // namespace loadbench
