#include "harness/process/journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/process/locks.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

constexpr const char* kKindNames[] = {"cgroup",  "file",   "strategy", "setting",
                                      "process", "folder", "netns",    "netdev",
                                      "mount",   "loop",   "iocgroup"};
constexpr int kKinds = sizeof kKindNames / sizeof kKindNames[0];

// Whether a journal line of this kind is one path (made absolute), not fields.
bool IsPath(Leftover kind) {
  return kind == Leftover::kCgroup || kind == Leftover::kFile || kind == Leftover::kFolder ||
         kind == Leftover::kMount || kind == Leftover::kIoCgroup;
}

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  return ::getcwd(cwd, sizeof cwd) != nullptr ? fmt::format("{}/{}", cwd, path) : path;
}

std::string StartTime(long pid) { return ProcessStartTime(static_cast<pid_t>(pid)); }

// Whether the process a journal is named for (PID-STARTTIME) still runs: that pid, started then,
// and not a zombie (one killed whose parent has not reaped it yet holds nothing).
bool StillRuns(const std::string& journal) {
  const size_t dash = journal.find('-');
  const long pid = std::strtol(journal.c_str(), nullptr, 10);
  const std::vector<std::string> stat = ProcStatFields(pid);
  return dash != std::string::npos && pid > 0 && stat.size() > 22 && stat[3] != "Z" &&
         stat[22] == journal.substr(dash + 1);
}

// This user's journal folder (the header's rules), opened: made first when `create`. An invalid
// descriptor when there is none; *why says so when one is there but is not to be trusted.
UniqueFd OpenFolder(bool create, std::string* why) {
  std::string dir;
  if (!LockDir(&dir).ok()) return UniqueFd();
  dir += fmt::format("/leftovers-{}", ::geteuid());
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return UniqueFd();
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ELOOP || errno == ENOTDIR) {
      *why = fmt::format("{}: a symbolic link or not a folder, not a journal folder", dir);
    }
    return UniqueFd();
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return UniqueFd();
  if (st.st_uid != ::geteuid()) {
    *why =
        fmt::format("{}: owned by uid {}, not by this user (uid {})", dir, st.st_uid, ::geteuid());
    return UniqueFd();
  }
  if ((st.st_mode & 077) != 0) {
    *why = fmt::format("{}: mode {:o}, open to other users (a journal folder is 700)", dir,
                       st.st_mode & 07777);
    return UniqueFd();
  }
  return fd;
}

// This process's journal: lines "+\tKIND\tWHAT" when a thing is about to be made and
// "-\tKIND\tWHAT" when it is gone, appended with one write(2) each.
class Journal {
 public:
  void Write(char sign, Leftover kind, const std::string& what) {
    std::lock_guard<std::mutex> hold(mu_);
    if (pid_ != ::getpid()) {  // a forked child starts a journal of its own
      fd_.reset();             // this process's copy of the parent's descriptor
      dir_.reset();
      open_.clear();
      pid_ = ::getpid();
    }
    const std::string key = fmt::format("{}\t{}", kKindNames[static_cast<int>(kind)], what);
    if (sign == '-') {
      auto it = open_.find(key);
      if (it == open_.end()) return;
      open_.erase(it);
    }
    if (!fd_.valid() && sign == '+' && !Open()) return;
    if (!fd_.valid()) return;
    const std::string line = fmt::format("{}\t{}\n", sign, key);
    if (::write(fd_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) return;
    if (sign == '+') open_.insert(key);
    if (open_.empty()) {  // nothing left to clean: no journal
      ::unlinkat(dir_.get(), name_.c_str(), 0);
      fd_.reset();
    }
  }

 private:
  bool Open() {
    std::string why;
    dir_ = OpenFolder(/*create=*/true, &why);
    if (!dir_.valid()) return false;
    name_ = fmt::format("{}-{}", ::getpid(), StartTime(::getpid()));
    fd_.reset(::openat(dir_.get(), name_.c_str(),
                       O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
    return fd_.valid();
  }

  std::mutex mu_;
  pid_t pid_ = ::getpid();
  UniqueFd dir_;
  std::string name_;
  UniqueFd fd_;
  std::multiset<std::string> open_;
};

Journal& Mine() {
  static Journal* j = new Journal;  // never destroyed: tracked from anywhere until exit
  return *j;
}

// The things a journal's text still lists, in the order they were made.
JournalLines Outstanding(const std::string& text) {
  JournalLines out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 3 || line[1] != '\t') continue;
    const size_t tab = line.find('\t', 2);
    const std::string kind = line.substr(2, tab - 2), what = line.substr(tab + 1);
    for (int k = 0; k < kKinds; ++k) {
      if (tab == std::string::npos || kind != kKindNames[k]) continue;
      const std::pair<Leftover, std::string> item{static_cast<Leftover>(k), what};
      if (line[0] == '+') out.push_back(item);
      for (auto it = out.begin(); line[0] == '-' && it != out.end(); ++it) {
        if (*it == item) {
          out.erase(it);
          break;
        }
      }
    }
  }
  return out;
}

// Journal `name` of the folder `dir`, read when it is a regular file of this user's that no one
// else may write; else false, and *why says why it is not read.
bool ReadJournal(int dir, const std::string& name, JournalLines* out, std::string* why) {
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    *why = Status::FromErrno("journal " + name, errno).message();
    return false;
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    *why = fmt::format("journal {}: not a file of this user's that only it may write (uid {}, "
                       "mode {:o}); left alone",
                       name, st.st_uid, st.st_mode & 07777);
    return false;
  }
  std::string text;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  *out = Outstanding(text);
  return true;
}

// The names of the journals (PID-STARTTIME) in the folder `dir`.
std::vector<std::string> JournalNames(int dir) {
  std::vector<std::string> names;
  DIR* d = ::fdopendir(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const size_t dash = name.find('-');
    if (dash != std::string::npos && dash > 0 && std::strtol(name.c_str(), nullptr, 10) > 0) {
      names.push_back(name);
    }
  }
  ::closedir(d);
  return names;
}

}  // namespace

std::vector<pid_t> ProcessGroupMembers(pid_t pgid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const long pid = std::strtol(e->d_name, nullptr, 10);
    if (pid <= 0) continue;
    const std::vector<std::string> stat = ProcStatFields(pid);
    if (stat.size() > 5 && stat[3] != "Z" && stat[5] == std::to_string(pgid)) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(d);
  return out;
}

std::string ProcessStartTime(pid_t pid) {
  const std::vector<std::string> stat = ProcStatFields(pid);
  return stat.size() > 22 ? stat[22] : "";
}

void TrackLeftover(Leftover kind, const std::string& what) {
  Mine().Write('+', kind, IsPath(kind) ? Absolute(what) : what);
}

void UntrackLeftover(Leftover kind, const std::string& what) {
  Mine().Write('-', kind, IsPath(kind) ? Absolute(what) : what);
}

std::vector<StaleJournal> StaleJournals(std::vector<std::string>* refused) {
  std::vector<StaleJournal> out;
  std::string why;
  const UniqueFd dir = OpenFolder(/*create=*/false, &why);
  if (!dir.valid()) {
    if (!why.empty() && refused != nullptr) refused->push_back(why);
    return out;
  }
  for (const std::string& name : JournalNames(dir.get())) {
    const long pid = std::strtol(name.c_str(), nullptr, 10);
    if (pid == ::getpid() || StillRuns(name)) continue;
    StaleJournal j{.name = name, .pid = pid, .owner = ::geteuid(), .outstanding = {}};
    if (!ReadJournal(dir.get(), name, &j.outstanding, &why)) {
      if (refused != nullptr) refused->push_back(why);
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

void RemoveJournal(const StaleJournal& journal) {
  std::string why;
  const UniqueFd dir = OpenFolder(/*create=*/false, &why);
  if (dir.valid()) ::unlinkat(dir.get(), journal.name.c_str(), 0);
}

JournalLines JournalOf(long pid) {
  JournalLines out;
  std::string why;
  const UniqueFd dir = OpenFolder(/*create=*/false, &why);
  const std::string start = StartTime(pid);
  if (dir.valid() && !start.empty()) {
    (void)ReadJournal(dir.get(), fmt::format("{}-{}", pid, start), &out, &why);
  }
  return out;
}

JournalLines AncestorJournalListing(Leftover kind, const std::string& what) {
  for (const long pid : AncestorPids()) {
    JournalLines lines = JournalOf(pid);
    for (const auto& [k, w] : lines) {
      if (k == kind && w == what) return lines;
    }
  }
  return {};
}

JournalLines RunningJournalListing(Leftover kind, const std::string& what) {
  std::string why;
  const UniqueFd dir = OpenFolder(/*create=*/false, &why);
  if (!dir.valid()) return {};
  for (const std::string& name : JournalNames(dir.get())) {
    JournalLines lines;
    if (StillRuns(name) && ReadJournal(dir.get(), name, &lines, &why) &&
        std::find(lines.begin(), lines.end(), std::pair{kind, what}) != lines.end()) {
      return lines;
    }
  }
  return {};
}

Status MakeJournaledFolder(const std::string& prefix, std::string* dir) {
  std::string tmpl = fmt::format("/tmp/{}-XXXXXX", prefix);
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno(tmpl, errno);
  *dir = tmpl;
  TrackLeftover(Leftover::kFolder, *dir);
  return Status::Ok();
}

Status RemoveJournaledFolder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return Status::IOError(fmt::format("{}: {}", dir, ec.message()));
  UntrackLeftover(Leftover::kFolder, dir);
  return Status::Ok();
}

std::string TempSibling(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, ::getpid());
}

bool IsTempSiblingOf(const std::string& path, long pid) {
  return path.starts_with("/") && path.ends_with(fmt::format(".tmp.{}", pid));
}

}  // namespace loadbench
