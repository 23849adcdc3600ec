// overlay and tmpfs. An overlay's lower layer holds the model on an ext4 loop device (so that
// its reads can be throttled and counted), its upper and work folders beside it on that file
// system, since overlayfs takes no upper layer on an overlay (which /tmp may be in a container);
// the model is read through the overlay's mount. A tmpfs is the model in memory, copied in.
#include <sys/stat.h>

#include <cerrno>

#include <fmt/format.h>

#include "harness/storage/parts.h"
#include "loaders/base/proc_fields.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

}  // namespace

Status MakeOverlay(const StorageSpec& spec, const Storage::Made& how, StorageParts* p) {
  (void)spec;
  uint64_t model_bytes = 0;
  LB_RETURN_IF_ERROR(FilesBytes(how.files, &model_bytes));
  const uint64_t bytes = BackingBytes("ext4", model_bytes);
  LB_RETURN_IF_ERROR(CheckTmpSpace(bytes, "the overlay's ext4 backing file"));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-storage", &p->folder));
  std::string lower_mount;
  LB_RETURN_IF_ERROR(LoopFilesystem(p, "ext4", "", bytes, &lower_mount));
  for (const char* dir : {"lower", "upper", "work"}) {
    const std::string path = fmt::format("{}/{}", lower_mount, dir);
    if (::mkdir(path.c_str(), 0755) != 0) return Status::IOErrorFromErrno(path, errno);
  }
  uint64_t copied = 0;
  LB_RETURN_IF_ERROR(CopyFiles(*p, how.files, lower_mount + "/lower", &copied));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-mnt", &p->root));
  const std::string data =
      fmt::format("lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work", lower_mount);
  LB_RETURN_IF_ERROR(MountOn(p, "overlay", p->root, "overlay", 0, data));
  p->fs = "overlay";
  p->lower_fs = "ext4";
  p->cached_in = lower_mount + "/lower";
  return Status::Ok();
}

Status MakeTmpfs(const StorageSpec& spec, const Storage::Made& how, StorageParts* p) {
  (void)spec;
  uint64_t model_bytes = 0;
  LB_RETURN_IF_ERROR(FilesBytes(how.files, &model_bytes));
  const uint64_t size = (model_bytes + 64 * kMiB + kMiB - 1) / kMiB * kMiB;
  const std::optional<uint64_t> available = MeminfoBytes("MemAvailable");
  if (available && *available < size) {
    return Status::Unsupported(fmt::format("a tmpfs of the model needs {} of memory; {} is "
                                           "available",
                                           FormatBytes(size), FormatBytes(*available)));
  }
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-mnt", &p->root));
  LB_RETURN_IF_ERROR(
      MountOn(p, "tmpfs", p->root, "tmpfs", 0, fmt::format("size={},mode=0755", size)));
  p->fs = "tmpfs";
  p->bytes = size;
  uint64_t copied = 0;
  return CopyFiles(*p, how.files, p->root, &copied);
}

}  // namespace loadbench
