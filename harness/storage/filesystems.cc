// ext4, xfs and btrfs on a file-backed loop device: a backing file allocated whole in the
// storage's folder, formatted (no discard, so the allocation stays; ext4 with its inode tables
// and journal written now, not by a thread during the runs), bound to a loop device with direct
// I/O, mounted on a folder of its own, and the model copied in and synced.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "harness/storage/parts.h"
#include "loaders/base/file_io.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct Mkfs {
  const char* program;
  const char* package;
  std::vector<std::string> args;  // before the file
};

Mkfs MkfsOf(const std::string& kind) {
  if (kind == "xfs") return {"mkfs.xfs", "xfsprogs", {"-q", "-f", "-K"}};
  if (kind == "btrfs") return {"mkfs.btrfs", "btrfs-progs", {"-q", "-f", "-K"}};
  return {"mkfs.ext4",
          "e2fsprogs",
          {"-q", "-F", "-m", "0", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0"}};
}

// The backing file, `bytes` long, allocated (a file system on holes would be laid out by the
// host's allocator as it is written).
Status MakeBackingFile(const std::string& path, uint64_t bytes) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::IOErrorFromErrno(path, errno);
  if (::fallocate(fd.get(), 0, 0, static_cast<off_t>(bytes)) == 0) return Status::Ok();
  if (errno != EOPNOTSUPP && errno != ENOSYS) {
    return Status::IOErrorFromErrno(fmt::format("allocating {} for {}", FormatBytes(bytes), path),
                                    errno);
  }
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return Status::IOErrorFromErrno(path, errno);
  }
  return Status::Ok();
}

}  // namespace

uint64_t BackingBytes(const std::string& kind, uint64_t model_bytes) {
  // mkfs.xfs refuses less than 300 MB, mkfs.btrfs (6.2) about 110 MiB.
  const uint64_t least = kind == "xfs" ? 300 * kMiB : kind == "btrfs" ? 114 * kMiB : 32 * kMiB;
  const uint64_t want = model_bytes + model_bytes / 100 * 15 + 64 * kMiB;
  return (std::max(want, least) + kMiB - 1) / kMiB * kMiB;
}

Status LoopFilesystem(StorageParts* p, const std::string& kind, const std::string& compress,
                      uint64_t bytes, std::string* mount) {
  p->backing = fmt::format("{}/{}.img", p->folder, kind);
  LB_RETURN_IF_ERROR(MakeBackingFile(p->backing, bytes));
  p->bytes = bytes;
  const Mkfs m = MkfsOf(kind);
  std::vector<std::string> argv = {m.program};
  argv.insert(argv.end(), m.args.begin(), m.args.end());
  argv.push_back(p->backing);
  const double t0 = SteadyNow();
  LB_RETURN_IF_ERROR(RunTool(argv, m.package));
  SayStep(*p, fmt::format("formatted {} of {}", kind, FormatBytes(bytes)), SecondsSince(t0));
  p->maker = {.program = m.program,
              .version = ToolVersion(m.program, "-V"),
              .args = std::vector<std::string>(argv.begin() + 1, argv.end())};
  LB_RETURN_IF_ERROR(AttachJournaledLoop(p, p->backing, /*read_only=*/false));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-mnt", mount));
  const std::string data = compress.empty() || compress == "none" ? "" : "compress=" + compress;
  return MountOn(p, "/dev/" + p->loop, *mount, kind, 0, data);
}

Status MakeLoopFilesystem(const StorageSpec& spec, const Storage::Made& how, StorageParts* p) {
  uint64_t model_bytes = 0;
  LB_RETURN_IF_ERROR(FilesBytes(how.files, &model_bytes));
  const uint64_t bytes = BackingBytes(spec.kind, model_bytes);
  LB_RETURN_IF_ERROR(CheckTmpSpace(bytes, fmt::format("the {} backing file", spec.kind)));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-storage", &p->folder));
  LB_RETURN_IF_ERROR(LoopFilesystem(p, spec.kind, OptionOf(spec, "compress"), bytes, &p->root));
  p->fs = spec.kind;
  uint64_t copied = 0;
  return CopyFiles(*p, how.files, p->root, &copied);
}

}  // namespace loadbench
