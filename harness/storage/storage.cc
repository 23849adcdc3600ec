// A storage made (each kind by its family's file: filesystems.cc, images.cc, overlay.cc,
// fuse.cc) and removed: everything it made undone in reverse order, each journal line struck off
// as its thing goes; and what env.json says of it.
#include "harness/storage/storage.h"

#include <sys/mount.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "harness/process/journal.h"
#include "harness/storage/devices.h"
#include "harness/storage/parts.h"

namespace loadbench {
namespace {

// Unmounted: a busy file system retried for a second, then detached (it goes when its last
// user does).
Status Unmount(const std::string& dir) {
  for (int retry = 0; MountedAt(dir); ++retry) {
    if (::umount2(dir.c_str(), 0) == 0) continue;
    if (errno == EINVAL || errno == ENOENT) break;  // not a mount point (any more)
    if (errno != EBUSY) return Status::IOErrorFromErrno(fmt::format("unmounting {}", dir), errno);
    if (retry == 50) {
      if (::umount2(dir.c_str(), MNT_DETACH) != 0) {
        return Status::IOErrorFromErrno(fmt::format("detaching {}", dir), errno);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Ok();
}

nlohmann::ordered_json DeviceClassEnv(const DeviceClass& d) {
  if (!d.on()) return nullptr;
  return {{"preset",
           d.preset.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d.preset)},
          {"read_bps", d.read_bps},
          {"read_iops", d.read_iops}};
}

nlohmann::ordered_json LoopEnv(const StorageParts& p) {
  if (p.loop.empty()) return nullptr;
  auto value = [&](const std::string& file) -> nlohmann::ordered_json {
    const std::optional<uint64_t> v = BlockValue(p.loop, file);
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  return {{"device", p.loop},
          {"dio", BlockValue(p.loop, "loop/dio").value_or(0) == 1},
          {"read_ahead_kb", value("queue/read_ahead_kb")},
          {"max_sectors_kb", value("queue/max_sectors_kb")},
          {"max_segments", value("queue/max_segments")},
          {"backing", LoopBackingFile("/dev/" + p.loop)}};
}

}  // namespace

Storage::Storage() = default;

Storage::~Storage() {
  if (parts_ == nullptr) return;
  const std::string who = parts_->who.empty() ? "loadbench: storage " + spec_.kind : parts_->who;
  if (Status s = Leave(); !s.ok()) fmt::print(stderr, "{}: {}\n", who, s.message());
  for (auto it = parts_->undo.rbegin(); it != parts_->undo.rend(); ++it) {
    if (Status s = UndoThing(*it); !s.ok()) {
      fmt::print(stderr, "{}: could not remove {}: {} (left for the next measuring command)\n", who,
                 it->what, s.message());
    }
  }
}

Status UndoThing(const MadeThing& t) {
  switch (t.kind) {
    case MadeThing::kFolder:
      if (MountedAt(t.what)) return Status::IOError("still mounted");
      return RemoveJournaledFolder(t.what);
    case MadeThing::kLoop:
      LB_RETURN_IF_ERROR(DetachLoop(t.what));
      UntrackLeftover(Leftover::kLoop, t.what + "\t" + t.backing);
      return Status::Ok();
    case MadeThing::kMount:
      LB_RETURN_IF_ERROR(Unmount(t.what));
      UntrackLeftover(Leftover::kMount, t.what);
      return Status::Ok();
    case MadeThing::kProcess:
      LB_RETURN_IF_ERROR(EndProcessGroup(t.pid));
      UntrackLeftover(Leftover::kProcess, t.what);
      return Status::Ok();
  }
  return Status::Ok();
}

Status Storage::Make(const StorageSpec& spec, const Made& how, std::unique_ptr<Storage>* out) {
  if (spec.here()) {
    return Status::BadInput("the `here` storage is the data folder as it is: nothing to make");
  }
  uint64_t model_bytes = 0;
  LB_RETURN_IF_ERROR(FilesBytes(how.files, &model_bytes));
  if (how.files.empty() && spec.kind != "fuse") {
    return Status::BadInput(fmt::format("a {} storage needs the model's files", spec.kind));
  }
  if (const std::string why = StorageUnavailable(spec, model_bytes); !why.empty()) {
    return Status::Unsupported(why);
  }
  std::unique_ptr<Storage> s(new Storage);
  s->spec_ = spec;
  if (s->spec_.label.empty()) s->spec_.label = LabelOf(spec);
  s->parts_ = std::make_unique<StorageParts>();
  StorageParts& p = *s->parts_;
  if (!how.who.empty()) p.who = fmt::format("{}: storage {}", how.who, s->spec_.label);
  p.served_root = how.served_root;
  while (p.served_root.size() > 1 && p.served_root.back() == '/') p.served_root.pop_back();
  const double t0 = SteadyNow();
  const std::string& k = spec.kind;
  Status st = k == "ext4" || k == "xfs" || k == "btrfs" ? MakeLoopFilesystem(spec, how, &p)
              : k == "squashfs" || k == "erofs"         ? MakeImage(spec, how, &p)
              : k == "overlay"                          ? MakeOverlay(spec, how, &p)
              : k == "tmpfs"                            ? MakeTmpfs(spec, how, &p)
              : k == "fuse"                             ? MakeFuse(spec, how, &p)
                            : Status::BadInput(fmt::format("no storage kind {}", k));
  if (!st.ok()) return st;  // what was made goes with `s`
  p.made_s = SecondsSince(t0);
  s->device_ = p.loop;
  *out = std::move(s);
  return Status::Ok();
}

std::string PathOnStorage(const StorageParts& p, const std::string& kind, const std::string& path) {
  const std::string& served = p.served_root;
  if (kind == "fuse" && !served.empty() && path.starts_with(served) &&
      (path.size() == served.size() || path[served.size()] == '/')) {
    return p.root + path.substr(served.size());
  }
  return p.root + "/" + path.substr(path.rfind('/') + 1);
}

std::string Storage::PathOf(const std::string& path) const {
  return PathOnStorage(*parts_, spec_.kind, path);
}

std::string Storage::CachedIn() const { return parts_->cached_in; }

nlohmann::ordered_json Storage::Env() const {
  const StorageParts& p = *parts_;
  nlohmann::ordered_json options = nlohmann::ordered_json::object();
  for (const auto& [key, value] : spec_.options) options[key] = value;
  if ((spec_.kind == "squashfs" || spec_.kind == "erofs") && !options.contains("compress")) {
    options["compress"] = DefaultCompress(spec_.kind);  // what was used, though not given
  }
  nlohmann::ordered_json maker = nullptr;
  if (!p.maker.program.empty()) {
    maker = {{"program", p.maker.program}, {"version", p.maker.version}, {"args", p.maker.args}};
  }
  nlohmann::ordered_json j = {{"kind", spec_.kind}, {"label", spec_.label},
                              {"options", options}, {"device_class", DeviceClassEnv(spec_.device)},
                              {"loop", LoopEnv(p)}, {"fs", p.fs}};
  if (!p.lower_fs.empty()) j["lower_fs"] = p.lower_fs;
  j["mkfs"] = maker;
  j["mount_options"] = p.mount_options;
  j["bytes"] = p.bytes;
  j["made_s"] = p.made_s;
  return j;
}

}  // namespace loadbench
