// squashfs and erofs: a read-only image of the model made in the storage's folder (mksquashfs
// takes the files themselves; mkfs.erofs a folder, staged with hard links where the model is on
// /tmp's file system, else copies), bound read-only to a loop device with direct I/O and
// mounted read-only on a folder of its own.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "harness/storage/parts.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The arguments of mksquashfs after the files (the image first).
std::vector<std::string> SquashfsArgs(const std::string& image, const std::string& compress) {
  std::vector<std::string> args = {image, "-noappend", "-quiet", "-no-progress"};
  if (compress == "none") {
    args.insert(args.end(), {"-noI", "-noD", "-noF", "-noX"});
  } else {
    args.insert(args.end(), {"-comp", compress});
  }
  return args;
}

// The model's files in `stage`, by name: hard links where they are on its file system, copies
// where not. *copied says how many bytes were copied.
Status Stage(const StorageParts& p, const std::vector<std::string>& files, const std::string& stage,
             uint64_t* copied) {
  if (::mkdir(stage.c_str(), 0700) != 0) return Status::IOErrorFromErrno(stage, errno);
  std::vector<std::string> elsewhere;
  for (const std::string& f : files) {
    if (::link(f.c_str(), (stage + "/" + BaseName(f)).c_str()) == 0) continue;
    if (errno != EXDEV && errno != EPERM && errno != EMLINK) {
      return Status::IOErrorFromErrno(fmt::format("linking {} into {}", f, stage), errno);
    }
    elsewhere.push_back(f);
  }
  *copied = 0;
  if (elsewhere.empty()) return Status::Ok();
  uint64_t bytes = 0;
  LB_RETURN_IF_ERROR(FilesBytes(elsewhere, &bytes));
  LB_RETURN_IF_ERROR(CheckTmpSpace(bytes, "staging the model's files for mkfs.erofs"));
  return CopyFiles(p, elsewhere, stage, copied);
}

// The image of the model at `image`: mksquashfs or mkfs.erofs, as `spec` says.
Status MakeImageFile(const StorageSpec& spec, const Storage::Made& how, StorageParts* p,
                     const std::string& image) {
  std::string compress = OptionOf(spec, "compress");
  if (compress.empty()) compress = DefaultCompress(spec.kind);
  std::vector<std::string> argv;
  std::string stage;
  if (spec.kind == "squashfs") {
    argv = {"mksquashfs"};
    argv.insert(argv.end(), how.files.begin(), how.files.end());
    const std::vector<std::string> args = SquashfsArgs(image, compress);
    argv.insert(argv.end(), args.begin(), args.end());
    p->maker = {.program = "mksquashfs", .version = ToolVersion("mksquashfs", "-version")};
    p->maker.args = {"FILES..."};
    p->maker.args.insert(p->maker.args.end(), args.begin(), args.end());
  } else {
    stage = p->folder + "/stage";
    uint64_t copied = 0;
    LB_RETURN_IF_ERROR(Stage(*p, how.files, stage, &copied));
    // Not --quiet: its first line is its version, which it says nowhere else.
    argv = {"mkfs.erofs"};
    if (compress != "none") argv.push_back("-z" + compress);
    argv.insert(argv.end(), {image, stage});
    p->maker = {.program = "mkfs.erofs", .args = {argv.begin() + 1, argv.end()}};
  }
  const double t0 = SteadyNow();
  std::string said;
  Status st = RunTool(argv, spec.kind == "squashfs" ? "squashfs-tools" : "erofs-utils", &said);
  if (spec.kind == "erofs") p->maker.version = FirstVersion(said);
  if (!stage.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(stage, ec);  // the folder goes at the end anyway
  }
  LB_RETURN_IF_ERROR(st);
  struct stat sb {};
  if (::stat(image.c_str(), &sb) != 0) return Status::IOErrorFromErrno(image, errno);
  p->bytes = static_cast<uint64_t>(sb.st_size);
  SayStep(*p, fmt::format("made a {} image of {} ({})", spec.kind, FormatBytes(p->bytes), compress),
          SecondsSince(t0));
  return Status::Ok();
}

}  // namespace

Status MakeImage(const StorageSpec& spec, const Storage::Made& how, StorageParts* p) {
  uint64_t model_bytes = 0;
  LB_RETURN_IF_ERROR(FilesBytes(how.files, &model_bytes));
  LB_RETURN_IF_ERROR(CheckTmpSpace(model_bytes + model_bytes / 64 + 16 * kMiB,
                                   fmt::format("the {} image", spec.kind)));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-storage", &p->folder));
  p->backing = fmt::format("{}/{}.img", p->folder, spec.kind);
  LB_RETURN_IF_ERROR(MakeImageFile(spec, how, p, p->backing));
  LB_RETURN_IF_ERROR(AttachJournaledLoop(p, p->backing, /*read_only=*/true));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-mnt", &p->root));
  p->fs = spec.kind;
  return MountOn(p, "/dev/" + p->loop, p->root, spec.kind, MS_RDONLY, "");
}

}  // namespace loadbench
