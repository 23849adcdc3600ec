// The steps every storage kind is made of: a program run, a folder made, a loop device bound, a
// mount made, the model's files copied in and synced, free space checked; each thing journaled
// before it is made and added to the storage's undo list.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/process/child.h"
#include "harness/process/interrupt.h"
#include "harness/process/journal.h"
#include "harness/process/program.h"
#include "harness/storage/devices.h"
#include "harness/storage/parts.h"
#include "loaders/base/file_io.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr size_t kCopyChunk = size_t{8} << 20;

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// `len` bytes of `src` into `dst` from their offsets now: copy_file_range where the kernel does
// it between these file systems, else read and write.
Status CopyData(int src, int dst, const std::string& from, const std::string& to, uint64_t len) {
  bool in_kernel = true;
  std::vector<char> buf;
  for (uint64_t left = len; left > 0;) {
    if (Interrupted()) return Status::Failed("interrupted");
    const size_t want = static_cast<size_t>(std::min<uint64_t>(left, kCopyChunk));
    if (in_kernel) {
      const ssize_t n = ::copy_file_range(src, nullptr, dst, nullptr, want, 0);
      if (n > 0) {
        left -= static_cast<uint64_t>(n);
        continue;
      }
      if (n == 0) return Status::IOError(fmt::format("{}: ended early", from));
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
        return Status::IOErrorFromErrno(fmt::format("copying {} to {}", from, to), errno);
      }
      in_kernel = false;
      buf.resize(kCopyChunk);
    }
    const ssize_t n = ::read(src, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOErrorFromErrno(from, errno);
    if (n == 0) return Status::IOError(fmt::format("{}: ended early", from));
    LB_RETURN_IF_ERROR(WriteExact(dst, to, buf.data(), static_cast<size_t>(n)));
    left -= static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// One file copied to `to`, synced, and its pages dropped (the copy is read from the device).
Status CopyFile(const std::string& from, const std::string& to, uint64_t* bytes) {
  UniqueFd src;
  LB_RETURN_IF_ERROR(OpenReadOnly(from, 0, &src));
  uint64_t size = 0;
  LB_RETURN_IF_ERROR(FileSize(src.get(), from, &size));
  UniqueFd dst(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!dst.valid()) return Status::IOErrorFromErrno(to, errno);
  LB_RETURN_IF_ERROR(CopyData(src.get(), dst.get(), from, to, size));
  if (::fsync(dst.get()) != 0) return Status::IOErrorFromErrno(fmt::format("fsync {}", to), errno);
  ::posix_fadvise(dst.get(), 0, 0, POSIX_FADV_DONTNEED);
  *bytes += size;
  return Status::Ok();
}

}  // namespace

double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double SecondsSince(double t0) { return SteadyNow() - t0; }

void SayStep(const StorageParts& p, const std::string& step, double seconds) {
  if (!p.who.empty()) fmt::print(stderr, "{}: {} ({:.1f} s)\n", p.who, step, seconds);
}

Status FindTool(const std::string& name, const std::string& package, std::string* path) {
  Status s = FindProgram(name, package, path);
  if (s.ok()) return s;
  for (const char* dir : {"/usr/sbin", "/sbin"}) {  // root's tools, where PATH lacks them
    const std::string candidate = fmt::format("{}/{}", dir, name);
    if (::access(candidate.c_str(), X_OK) == 0) {
      *path = candidate;
      return Status::Ok();
    }
  }
  return s;
}

Status RunTool(const std::vector<std::string>& argv, const std::string& package, std::string* out) {
  ProgramRun r{.argv = argv};
  LB_RETURN_IF_ERROR(FindTool(argv[0], package, &r.argv[0]));
  r.stop_on_interrupt = true;
  std::string said;
  Status s = RunToEnd(r, &said);
  if (out != nullptr) *out = said;
  if (s.ok() || s.code() == Status::Code::kFailed) return s;
  return Status::IOError(fmt::format("{}: {}", fmt::join(argv, " "), s.message()));
}

std::string ToolVersion(const std::string& name, const std::string& flag) {
  std::string said;
  (void)RunTool({name, flag}, "", &said);  // some say it and exit 1
  return FirstVersion(said);
}

std::string FirstVersion(const std::string& text) {
  std::smatch m;
  static const std::regex version("[0-9]+\\.[0-9]+(\\.[0-9]+)?");
  return std::regex_search(text, m, version) ? m.str() : "";
}

Status MakeFolder(StorageParts* p, const std::string& prefix, std::string* dir) {
  LB_RETURN_IF_ERROR(MakeJournaledFolder(prefix, dir));
  p->undo.push_back({.kind = MadeThing::kFolder, .what = *dir});
  return Status::Ok();
}

Status AttachJournaledLoop(StorageParts* p, const std::string& file, bool read_only) {
  for (int attempt = 1;; ++attempt) {
    std::string device;
    LB_RETURN_IF_ERROR(FreeLoopDevice(&device));
    const std::string line = device + "\t" + file;
    TrackLeftover(Leftover::kLoop, line);
    Status st = AttachLoop(device, file, read_only);
    const std::string bound = LoopBackingFile(device);
    if (st.ok() || bound == file) {  // bound, even when losetup then failed: to be undone
      p->undo.push_back({.kind = MadeThing::kLoop, .what = device, .backing = file});
      if (!st.ok()) return st;
      p->loop = device.substr(5);
      break;
    }
    UntrackLeftover(Leftover::kLoop, line);
    // Another process took the device between the pick and losetup: pick again.
    if (bound.empty() || attempt == 5) return st;
  }
  if (BlockValue(p->loop, "loop/dio").value_or(0) != 1 && !p->who.empty()) {
    fmt::print(stderr,
               "{}: WARNING: /dev/{} has direct I/O off: the host's page cache holds what "
               "is read of {}\n",
               p->who, p->loop, file);
  }
  return Status::Ok();
}

Status MountOn(StorageParts* p, const std::string& source, const std::string& dir,
               const std::string& type, unsigned long flags, const std::string& data) {
  TrackLeftover(Leftover::kMount, dir);
  if (::mount(source.c_str(), dir.c_str(), type.c_str(), flags,
              data.empty() ? nullptr : data.c_str()) != 0) {
    const int err = errno;
    UntrackLeftover(Leftover::kMount, dir);
    return Status::IOErrorFromErrno(fmt::format("mount -t {} {}{} on {}", type,
                                                data.empty() ? "" : "-o " + data + " ", source,
                                                dir),
                                    err);
  }
  p->undo.push_back({.kind = MadeThing::kMount, .what = dir});
  p->mount_options = MountOptionsAt(dir);
  return Status::Ok();
}

std::string MountOptionsAt(const std::string& dir) {
  std::ifstream mounts("/proc/self/mounts");
  std::string options;
  for (std::string device, at, type, opts, rest;
       mounts >> device >> at >> type >> opts && std::getline(mounts, rest);) {
    if (at == dir) options = opts;  // the last: the one on top
  }
  return options;
}

bool MountedAt(const std::string& dir) { return !MountOptionsAt(dir).empty(); }

Status CopyFiles(const StorageParts& p, const std::vector<std::string>& files,
                 const std::string& dir, uint64_t* bytes) {
  const double t0 = SteadyNow();
  *bytes = 0;
  for (const std::string& f : files) {
    LB_RETURN_IF_ERROR(CopyFile(f, dir + "/" + BaseName(f), bytes));
  }
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d.valid() || ::syncfs(d.get()) != 0) {
    return Status::IOErrorFromErrno(fmt::format("syncing {}", dir), errno);
  }
  SayStep(p, fmt::format("copied {} in", FormatBytes(*bytes)), SecondsSince(t0));
  return Status::Ok();
}

Status FilesBytes(const std::vector<std::string>& files, uint64_t* bytes) {
  *bytes = 0;
  for (const std::string& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) return Status::FromErrno(f, errno);
    if (!S_ISREG(st.st_mode)) return Status::BadInput(fmt::format("{}: not a file", f));
    *bytes += static_cast<uint64_t>(st.st_size);
  }
  return Status::Ok();
}

Status CheckTmpSpace(uint64_t need, const std::string& what) {
  struct statvfs vfs {};
  if (::statvfs(kStorageTmp, &vfs) != 0) return Status::IOErrorFromErrno(kStorageTmp, errno);
  const uint64_t free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (free >= need) return Status::Ok();
  return Status::Unsupported(fmt::format("{} needs {} free in {}; {} is free there", what,
                                         FormatBytes(need), kStorageTmp, FormatBytes(free)));
}

}  // namespace loadbench
