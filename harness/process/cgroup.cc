#include "harness/process/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <iterator>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/process/journal.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

constexpr int kRemoveRetries = 100;
constexpr auto kRemoveRetryDelay = std::chrono::milliseconds(10);
constexpr uint64_t kProbeLimitBytes = uint64_t{64} << 20;

// cgroupfs and procfs files report a size of 0, so they are read until EOF.
Status ReadText(const std::string& path, std::string* out) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(path, errno);
  out->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n == 0) return Status::Ok();
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
    } else if (errno != EINTR) {
      return Status::FromErrno(path, errno);
    }
  }
}

// One write per file: cgroupfs takes a value per write(2), not a stream.
Status WriteText(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(path, errno);
  return WriteExact(fd.get(), path, text.data(), text.size());
}

std::optional<uint64_t> ReadU64(const std::string& path) {
  std::string text;
  if (!ReadText(path, &text).ok()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return v;
}

// The value of `key` in a flat-keyed file ("key value" lines: memory.events, /proc/vmstat).
std::optional<uint64_t> ReadFlatKey(const std::string& path, std::string_view key) {
  std::string text;
  if (!ReadText(path, &text).ok()) return std::nullopt;
  std::istringstream in(text);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

// Whether `token` is one of the items of a list separated by spaces, commas or newlines
// (cgroup.controllers, mount options).
bool HasToken(std::string_view list, std::string_view token) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = std::min(list.find_first_of(" ,\n", pos), list.size());
    if (list.substr(pos, end - pos) == token) return true;
    pos = end + 1;
  }
  return false;
}

// Why the cgroup2 mount at `root` cannot hold a memory group, or "" when it can.
std::string V2Problem(const std::string& root) {
  const std::string controllers_path = root + "/cgroup.controllers";
  std::string controllers;
  Status s = ReadText(controllers_path, &controllers);
  if (!s.ok()) return s.message();
  if (!HasToken(controllers, "memory")) return controllers_path + " does not list memory";
  if (::access(root.c_str(), W_OK) != 0) return Status::FromErrno(root, errno).message();
  return "";
}

// This process's own group in the v1 memory hierarchy, relative to a mount whose root is
// `mount_root` ("" for the top): groups made there stay inside the limit of the container the
// harness runs in. (v1 allows tasks beside child groups; v2 does not, hence its groups go under
// its root.)
std::string OwnV1MemoryGroup(const std::string& mount_root) {
  std::string text;
  if (!ReadText("/proc/self/cgroup", &text).ok()) return "";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    // hierarchy-id:controllers:path
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    if (!HasToken(std::string_view(line).substr(a + 1, b - a - 1), "memory")) continue;
    std::string path = line.substr(b + 1);
    if (mount_root != "/" && path.starts_with(mount_root)) path = path.substr(mount_root.size());
    return path == "/" ? "" : path;
  }
  return "";
}

struct Hierarchy {
  bool v2 = false;
  std::string root;
};

Status FindHierarchy(Hierarchy* out) {
  std::string mountinfo;
  Status s = ReadText("/proc/self/mountinfo", &mountinfo);
  if (!s.ok()) return Status::Unsupported(s.message());
  std::string v2_reason = "no cgroup2 mount";
  std::string v1_root;
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    // id parent maj:min root mount_point options [optional...] - type source super_options
    std::istringstream in(line);
    std::vector<std::string> f{std::istream_iterator<std::string>(in), {}};
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || f.end() - dash < 4) continue;
    const std::string& mount_point = f[4];
    if (dash[1] == "cgroup2") {
      v2_reason = V2Problem(mount_point);
      if (v2_reason.empty()) {
        *out = {true, mount_point};
        return Status::Ok();
      }
    } else if (dash[1] == "cgroup" && v1_root.empty() && HasToken(dash[3], "memory")) {
      v1_root = mount_point + OwnV1MemoryGroup(f[3]);
    }
  }
  std::string v1_reason = "no memory hierarchy mounted";
  if (!v1_root.empty()) {
    if (::access(v1_root.c_str(), W_OK) == 0) {
      *out = {false, v1_root};
      return Status::Ok();
    }
    v1_reason = Status::FromErrno(v1_root, errno).message();
  }
  return Status::Unsupported(
      fmt::format("no usable memory cgroup: v2: {}; v1: {}", v2_reason, v1_reason));
}

Status AsUnsupported(Status s) { return s.ok() ? s : Status::Unsupported(s.message()); }

// Async-signal-safe: open, one write, close; errno preserved from the failing call.
bool WriteFromChild(const char* path, const char* text, size_t len) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n;
  do {
    n = ::write(fd, text, len);
  } while (n < 0 && errno == EINTR);
  int err = n < 0 ? errno : EIO;
  ::close(fd);
  if (n == static_cast<ssize_t>(len)) return true;
  errno = err;
  return false;
}

}  // namespace

MemoryCgroup::MemoryCgroup(bool v2, std::string path, uint64_t limit_bytes)
    : v2_(v2),
      path_(std::move(path)),
      procs_path_(path_ + "/cgroup.procs"),
      limit_bytes_(limit_bytes) {}

// A group that cannot be removed is empty by now and costs nothing; the destructor has no one
// to tell (Remove() reports it to a caller that asks).
MemoryCgroup::~MemoryCgroup() { (void)Remove(); }

Status MemoryCgroup::Create(uint64_t limit_bytes, std::unique_ptr<MemoryCgroup>* out) {
  Hierarchy h;
  LB_RETURN_IF_ERROR(FindHierarchy(&h));
  if (h.v2) {
    // The root is exempt from the no-internal-process rule, so this holds with tasks in it.
    LB_RETURN_IF_ERROR(AsUnsupported(WriteText(h.root + "/cgroup.subtree_control", "+memory")));
  }
  // A group left by a crashed run of a process with the same pid is skipped, not reused.
  static std::atomic<unsigned> counter{0};
  std::string path;
  for (;;) {
    path = fmt::format("{}/loadbench-{}-{}", h.root, ::getpid(), counter++);
    TrackLeftover(Leftover::kCgroup, path);  // a harness killed from here on leaves it
    if (::mkdir(path.c_str(), 0755) == 0) break;
    const int err = errno;
    UntrackLeftover(Leftover::kCgroup, path);
    if (err != EEXIST) return AsUnsupported(Status::FromErrno(path, err));
  }
  std::unique_ptr<MemoryCgroup> cg(new MemoryCgroup(h.v2, path, limit_bytes));
  if (limit_bytes == 0) {  // a group to measure in, with no limit of its own
    *out = std::move(cg);
    return Status::Ok();
  }
  const std::string limit = std::to_string(limit_bytes);
  if (h.v2) {
    LB_RETURN_IF_ERROR(WriteText(path + "/memory.max", limit));
    // Absent without swap accounting, where there is no swap to turn off.
    const std::string swap_max = path + "/memory.swap.max";
    if (::access(swap_max.c_str(), F_OK) == 0) LB_RETURN_IF_ERROR(WriteText(swap_max, "0"));
  } else {
    LB_RETURN_IF_ERROR(WriteText(path + "/memory.limit_in_bytes", limit));
    // Memory plus swap: absent without swap accounting; the memory limit holds either way.
    (void)WriteText(path + "/memory.memsw.limit_in_bytes", limit);
  }
  *out = std::move(cg);
  return Status::Ok();
}

bool IsCgroupOfProcess(const std::string& path, long pid) {
  Hierarchy h;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || !FindHierarchy(&h).ok() || path.substr(0, slash) != h.root) {
    return false;
  }
  const std::string prefix = fmt::format("loadbench-{}-", pid), name = path.substr(slash + 1);
  return name.starts_with(prefix) && name.size() > prefix.size() &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

std::optional<uint64_t> MemoryCgroup::PeakBytes() const {
  return ReadU64(path_ + (v2_ ? "/memory.peak" : "/memory.max_usage_in_bytes"));
}

std::optional<uint64_t> MemoryCgroup::OomKills() const {
  return ReadFlatKey(path_ + (v2_ ? "/memory.events" : "/memory.oom_control"), "oom_kill");
}

Status MemoryCgroup::Remove() {
  if (removed_) return Status::Ok();
  for (int retry = 0;; ++retry) {
    if (::rmdir(path_.c_str()) == 0) {
      removed_ = true;
      UntrackLeftover(Leftover::kCgroup, path_);
      return Status::Ok();
    }
    if (errno != EBUSY || retry == kRemoveRetries) return Status::FromErrno(path_, errno);
    std::this_thread::sleep_for(kRemoveRetryDelay);
  }
}

std::string MemoryCgroupUnsupportedReason() {
  std::unique_ptr<MemoryCgroup> probe;
  Status s = MemoryCgroup::Create(kProbeLimitBytes, &probe);
  if (s.ok()) s = probe->Remove();
  return s.ok() ? "" : s.message();
}

bool JoinCgroupFromChild(const char* procs_path) { return WriteFromChild(procs_path, "0", 1); }

bool SetOomScoreAdjFromChild(int adj) {
  if (adj < 0 || adj > 1000) {
    errno = EINVAL;
    return false;
  }
  char buf[8];
  char* const end = buf + sizeof buf;
  char* p = end;
  do {
    *--p = static_cast<char>('0' + adj % 10);
    adj /= 10;
  } while (adj != 0);
  return WriteFromChild("/proc/self/oom_score_adj", p, static_cast<size_t>(end - p));
}

std::optional<uint64_t> SystemOomKills() { return ReadFlatKey("/proc/vmstat", "oom_kill"); }

}  // namespace loadbench
