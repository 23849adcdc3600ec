#include "harness/process/locks.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/process/child.h"
#include "harness/process/interrupt.h"
#include "harness/process/journal.h"
#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

constexpr char kLockFdVar[] = "LOADBENCH_LOCK_FD";
constexpr auto kPollInterval = std::chrono::milliseconds(200);

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Opens the lock file, creating it when missing. Not O_CREAT on an existing file: in a sticky
// world-writable folder the kernel may refuse that for a file another user made
// (fs.protected_regular).
int OpenLockFile(const std::string& path) {
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT) return fd;
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      (void)::fchmod(fd, 0666);  // past the umask: every user's commands take this lock
      return fd;
    }
    if (errno != EEXIST) return fd;
  }
}

LockHolder ReadHolder(int fd) {
  char buf[4096];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  LockHolder h;
  if (n <= 0) return h;
  const auto j = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)), nullptr, false);
  if (!j.is_object()) return h;
  h.pid = j.value("pid", 0L);
  h.command = j.value("command", "");
  h.out_dir = j.value("out", "");
  h.since = j.value("since", "");
  return h;
}

void WriteHolder(int fd, const LockHolder& me) {
  const std::string text =
      nlohmann::json{
          {"pid", me.pid}, {"command", me.command}, {"out", me.out_dir}, {"since", me.since}}
          .dump() +
      "\n";
  // Who holds the lock is for people waiting on it; the lock holds without it.
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, text.data(), text.size(), 0);
}

Status MakeLockDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 01777) == 0) {
    (void)::chmod(dir.c_str(), 01777);  // past the umask: one lock for every user
  } else if (errno != EEXIST) {
    return Status::FromErrno(fmt::format("{}: cannot create the lock folder", dir), errno);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::FromErrno(fmt::format("{}: lock folder", dir), errno);
  }
  return Status::Ok();
}

// The machine lock passed down by `loadbench lock`: LOADBENCH_LOCK_FD names a descriptor of
// this very lock file that holds the lock (flock on it again succeeds at once).
bool AdoptInherited(const std::string& path, HeldLock* lock) {
  const char* var = std::getenv(kLockFdVar);
  if (var == nullptr || *var == '\0') return false;
  char* end = nullptr;
  const long fd = std::strtol(var, &end, 10);
  struct stat by_fd {
  }, by_path{};
  if (*end != '\0' || fd < 3 || ::fstat(static_cast<int>(fd), &by_fd) != 0 ||
      ::stat(path.c_str(), &by_path) != 0 || !SameFile(by_fd, by_path) ||
      ::flock(static_cast<int>(fd), LOCK_EX | LOCK_NB) != 0) {
    return false;
  }
  // Our own descriptor of it, close-on-exec: the workers need no lock.
  const int own = ::fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 3);
  if (own < 0) return false;
  lock->Hold(UniqueFd(own), path, /*inherited=*/true);
  return true;
}

// Whether `pid` is this process's parent, or its parent's, and so on up.
bool IsAncestor(long pid) {
  const std::vector<long> above = AncestorPids();
  return std::find(above.begin(), above.end(), pid) != above.end();
}

// The process that holds a flock on the file `st` is, as the kernel lists it (/proc/locks:
// "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF", waiters marked "->"); 0 when none.
long FlockHolder(const struct stat& st) {
  std::ifstream in("/proc/locks");
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string n, kind, mode, rw, dev;
    long pid = 0;
    if (!(f >> n >> kind >> mode >> rw >> pid >> dev) || kind != "FLOCK") continue;
    unsigned major = 0, minor = 0;
    unsigned long inode = 0;
    if (std::sscanf(dev.c_str(), "%x:%x:%lu", &major, &minor, &inode) == 3 && inode == st.st_ino &&
        makedev(major, minor) == st.st_dev) {
      return pid;
    }
  }
  return 0;
}

// Whether this process runs in a network namespace that process `pid`'s journal lists (a node of
// the cluster it made).
bool InNetnsJournaledBy(long pid) {
  for (const auto& [kind, name] : JournalOf(pid)) {
    if (kind == Leftover::kNetns && InNetns(name)) return true;
  }
  return false;
}

// The machine lock lent by a command (LendMachineLock): adopted below it, or in a namespace it
// made (a rank, whose daemon mpirun detaches), while it, or a process above it, holds the lock.
bool AdoptLent(const std::string& path, HeldLock* lock) {
  const char* var = std::getenv(kLockHolderVar);
  long pid = 0;
  char start[32] = {};
  struct stat st {};
  if (var == nullptr || std::sscanf(var, "%ld-%31s", &pid, start) != 2 || pid <= 1 ||
      ProcessStartTime(static_cast<pid_t>(pid)) != start || ::stat(path.c_str(), &st) != 0 ||
      !(IsAncestor(pid) || InNetnsJournaledBy(pid))) {
    return false;
  }
  const long holder = FlockHolder(st);
  const std::vector<long> above = AncestorPids(pid);
  if (holder != pid && std::find(above.begin(), above.end(), holder) == above.end()) return false;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  lock->Hold(std::move(fd), path, /*inherited=*/true);
  return true;
}

}  // namespace

std::string LockHolder::Describe() const {
  if (pid <= 0) return "an unknown process (it has not said who it is yet)";
  std::string more = fmt::format("`{}`", command);
  if (!out_dir.empty()) more += fmt::format(", results in {}", out_dir);
  if (!since.empty()) more += fmt::format(", since {} UTC", since);
  return fmt::format("pid {} ({})", pid, more);
}

LockHolder ThisProcess(const std::string& command_line, const std::string& out_dir) {
  return {static_cast<long>(::getpid()), command_line, out_dir, UtcNow()};
}

void HeldLock::Hold(UniqueFd fd, std::string path, bool inherited) {
  Release();
  fd_ = std::move(fd);
  path_ = std::move(path);
  inherited_ = inherited;
}

void HeldLock::Release() {
  if (!fd_.valid()) return;
  // Removed while still held, so nobody can take the removed file; whoever opened it before
  // finds, once it has the lock, that the path no longer names it, and opens it again.
  if (!inherited_) (void)::unlink(path_.c_str());
  fd_.reset();
}

Status LockDir(std::string* dir) {
  if (const char* env = std::getenv("LOADBENCH_LOCK_DIR"); env != nullptr && *env != '\0') {
    *dir = env;
    return MakeLockDir(*dir);
  }
  Status first = Status::Ok();
  for (const char* candidate : {"/run/lock/loadbench", "/tmp/loadbench-lock"}) {
    Status s = MakeLockDir(candidate);
    if (s.ok()) {
      *dir = candidate;
      return s;
    }
    if (first.ok()) first = s;
  }
  return first;
}

Status TryLock(const std::string& path, const LockHolder& me, HeldLock* lock, LockHolder* other) {
  for (;;) {
    UniqueFd fd(OpenLockFile(path));
    if (!fd.valid()) return Status::FromErrno(fmt::format("{}: cannot open the lock", path), errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        return Status::FromErrno(fmt::format("{}: flock", path), errno);
      }
      *other = ReadHolder(fd.get());
      return Status::Ok();
    }
    struct stat by_fd {
    }, by_path{};
    if (::fstat(fd.get(), &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 &&
        SameFile(by_fd, by_path)) {
      WriteHolder(fd.get(), me);
      lock->Hold(std::move(fd), path, /*inherited=*/false);
      return Status::Ok();
    }
    // The holder we waited for removed the file as it let go: take the path's new file.
  }
}

Status LockMachine(const std::string& who, const LockHolder& me, bool wait, HeldLock* lock) {
  std::string dir;
  LB_RETURN_IF_ERROR(LockDir(&dir));
  const std::string path = dir + "/measure.lock";
  if (AdoptInherited(path, lock) || AdoptLent(path, lock)) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  long named = 0;  // the holder last named on stderr
  for (;;) {
    LockHolder other;
    LB_RETURN_IF_ERROR(TryLock(path, me, lock, &other));
    if (lock->held()) break;
    if (IsAncestor(other.pid)) {  // waiting would be waiting for ourselves
      return Status::BadInput(fmt::format(
          "the machine lock is held by {}, which started this command without passing the lock "
          "on: keep the descriptor that LOADBENCH_LOCK_FD names open in the commands it starts",
          other.Describe()));
    }
    if (!wait) {
      return Status::BadInput(
          fmt::format("another measurement is running on this machine: {}; not waiting (--no-wait)",
                      other.Describe()));
    }
    InstallInterruptHandlers();  // Ctrl-C stops the wait, not the program half-way
    if (other.pid != named) {
      fmt::print(stderr,
                 "{}: waiting for the measurement running on this machine: {}; Ctrl-C "
                 "stops waiting (--no-wait refuses instead)\n",
                 who, other.Describe());
      named = other.pid;
    }
    if (Interrupted()) return Status::Failed("stopped waiting for the machine; nothing was run");
    std::this_thread::sleep_for(kPollInterval);
  }
  if (named != 0) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "{}: waited {:.0f} s; starting\n", who, s);
  }
  return Status::Ok();
}

Status LockResultsFolder(const std::string& dir, const LockHolder& me, HeldLock* lock) {
  LockHolder other;
  LB_RETURN_IF_ERROR(TryLock(dir + "/.loadbench.lock", me, lock, &other));
  if (lock->held()) return Status::Ok();
  return Status::BadInput(fmt::format(
      "{}: another loadbench is writing there: {}; choose another --out, or wait for it to end",
      dir, other.Describe()));
}

Status PassMachineLockToChildren(const HeldLock& lock) {
  if (!lock.held()) return Status::BadInput("the machine lock is not held");
  const int flags = ::fcntl(lock.fd(), F_GETFD);
  if (flags < 0 || ::fcntl(lock.fd(), F_SETFD, flags & ~FD_CLOEXEC) != 0) {
    return Status::FromErrno("the machine lock: fcntl", errno);
  }
  ::setenv(kLockFdVar, std::to_string(lock.fd()).c_str(), 1);
  return Status::Ok();
}

Status LendMachineLock(const HeldLock& lock) {
  if (!lock.held()) return Status::BadInput("the machine lock is not held");
  const std::string me = fmt::format("{}-{}", ::getpid(), ProcessStartTime(::getpid()));
  ::setenv(kLockHolderVar, me.c_str(), 1);
  return Status::Ok();
}

}  // namespace loadbench
