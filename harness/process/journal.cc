#include "harness/process/journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "harness/process/locks.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

constexpr const char* kKindNames[] = {"cgroup", "file",  "strategy", "setting", "process",
                                      "folder", "netns", "netdev",   "mount"};
constexpr int kKinds = sizeof kKindNames / sizeof kKindNames[0];

// Whether a journal line of this kind is one path (made absolute), not fields.
bool IsPath(Leftover kind) {
  return kind == Leftover::kCgroup || kind == Leftover::kFile || kind == Leftover::kFolder ||
         kind == Leftover::kMount;
}

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  return ::getcwd(cwd, sizeof cwd) != nullptr ? fmt::format("{}/{}", cwd, path) : path;
}

std::string StartTime(long pid) { return ProcessStartTime(static_cast<pid_t>(pid)); }

std::string JournalFolder() {
  std::string dir;
  if (!LockDir(&dir).ok()) return "";
  dir += "/leftovers";
  if (::mkdir(dir.c_str(), 01777) == 0) (void)::chmod(dir.c_str(), 01777);
  return ::access(dir.c_str(), W_OK | X_OK) == 0 ? dir : "";
}

// This process's journal: lines "+\tKIND\tWHAT" when a thing is about to be made and
// "-\tKIND\tWHAT" when it is gone, appended with one write(2) each.
class Journal {
 public:
  void Write(char sign, Leftover kind, const std::string& what) {
    std::lock_guard<std::mutex> hold(mu_);
    if (pid_ != ::getpid()) {  // a forked child starts a journal of its own
      fd_.reset();             // this process's copy of the parent's descriptor
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
      ::unlink(path_.c_str());
      fd_.reset();
    }
  }

 private:
  bool Open() {
    const std::string dir = JournalFolder();
    if (dir.empty()) return false;
    path_ = fmt::format("{}/{}-{}", dir, ::getpid(), StartTime(::getpid()));
    fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    return fd_.valid();
  }

  std::mutex mu_;
  pid_t pid_ = ::getpid();
  std::string path_;
  UniqueFd fd_;
  std::multiset<std::string> open_;
};

Journal& Mine() {
  static Journal* j = new Journal;  // never destroyed: tracked from anywhere until exit
  return *j;
}

// The things a journal still lists, in the order they were made.
std::vector<std::pair<Leftover, std::string>> Outstanding(const std::string& journal) {
  std::vector<std::pair<Leftover, std::string>> out;
  std::ifstream in(journal);
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

std::vector<StaleJournal> StaleJournals() {
  std::vector<StaleJournal> out;
  const std::string dir = JournalFolder();
  DIR* d = dir.empty() ? nullptr : ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const size_t dash = name.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    const long pid = std::strtol(name.c_str(), nullptr, 10);
    if (pid == ::getpid() || StartTime(pid) == name.substr(dash + 1)) continue;  // still runs
    StaleJournal j;
    j.path = dir + "/" + name;
    j.pid = pid;
    struct stat st {};
    if (::stat(j.path.c_str(), &st) == 0) j.owner = st.st_uid;
    j.outstanding = Outstanding(j.path);
    out.push_back(std::move(j));
  }
  ::closedir(d);
  return out;
}

}  // namespace loadbench
