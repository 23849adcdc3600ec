#include "harness/run/storage_runs.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "harness/cache/served.h"
#include "harness/probe/storage_probe.h"
#include "loaders/format/model.h"

namespace loadbench {
namespace {

// Every file of a model: its shards, and the index of a sharded model when it is a file apart.
std::vector<std::string> ModelFiles(const PreparedFile& f) {
  std::vector<std::string> out;
  for (const ShardInfo& s : f.table.shards) out.push_back(s.path);
  if (f.table.sharded() && f.path != f.table.shards[0].path) out.push_back(f.path);
  return out;
}

}  // namespace

Status StorageRuns::Check(const Experiment& e, uint64_t model_bytes) {
  for (const ExperimentStorage& st : e.storages) {
    if (!st.spec.made()) continue;
    const std::string why = StorageUnavailable(st.spec, model_bytes);
    if (!why.empty()) {
      return Status::BadInput(fmt::format("{} ({}): {}", st.where, st.spec.label, why));
    }
  }
  return Status::Ok();
}

Status StorageRuns::EnterFor(const Experiment& e, const ExperimentRun& r,
                             const std::vector<PreparedFile>& files, const RemoteFiles& remote,
                             const std::string& who) {
  if (e.storages.empty() || r.storage == index_) return Status::Ok();
  Remove();
  index_ = r.storage;
  failed_.clear();
  const ExperimentStorage& st = e.storages[r.storage];
  kind_ = st.spec.kind;
  fuse_cache_full_ = false;
  for (const auto& [key, value] : st.spec.options) {
    fuse_cache_full_ |= kind_ == "fuse" && key == "cache" && value == "full";
  }
  if (!st.spec.made()) return Status::Ok();
  if (Status s = Make(st, files, remote, who); !s.ok()) {
    storage_.reset();  // removes what was made
    failed_ = fmt::format("storage {} could not be made: {}", st.spec.label, s.message());
    fmt::print(stderr, "{}: {}; its runs fail\n", who, failed_);
  }
  return Status::Ok();
}

Status StorageRuns::Make(const ExperimentStorage& st, const std::vector<PreparedFile>& files,
                         const RemoteFiles& remote, const std::string& who) {
  Storage::Made how;
  how.who = who;
  for (const PreparedFile& f : files) {
    for (const std::string& path : ModelFiles(f)) how.files.push_back(path);
  }
  if (st.spec.kind == "fuse") {
    LB_RETURN_IF_ERROR(remote.MountSource(files, who, &how.server_url, &how.s3_endpoint));
    how.served_root = remote.data_dir();
  }
  const auto t0 = std::chrono::steady_clock::now();
  LB_RETURN_IF_ERROR(Storage::Make(st.spec, how, &storage_));
  if (st.spec.kind == "fuse") remote.RegisterMount(storage_->PathOf(remote.data_dir()));
  // An overlay's files keep their page cache in the lower layer's: the cache state is made and
  // checked there (measured: cachestat of the overlay's file read 0.0% after it was read whole).
  if (const std::string lower = storage_->CachedIn(); !lower.empty()) {
    cached_prefix_ = storage_->PathOf(files.front().path);
    cached_prefix_ = cached_prefix_.substr(0, cached_prefix_.rfind('/') + 1);
    RegisterServed(cached_prefix_, lower, "");
  }
  LB_RETURN_IF_ERROR(PrepareOn(files));
  LB_RETURN_IF_ERROR(storage_->Enter());
  nlohmann::ordered_json env = storage_->Env();
  env["where"] = st.where;
  if (st.probe) env["probe"] = OwnProbe(who);
  env_.push_back(std::move(env));
  changed_ = true;
  fmt::print(stderr, "{}: storage {} ready ({:.1f} s)\n", who, st.spec.label,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return Status::Ok();
}

// The experiment's files as read on the storage: each one's table read there and held to the
// one read in the data folder; the reference checksums and the parts' carried over.
Status StorageRuns::PrepareOn(const std::vector<PreparedFile>& files) {
  files_.clear();
  for (const PreparedFile& f : files) {
    PreparedFile v = f;
    v.origin = f.path;
    v.path = storage_->PathOf(f.path);
    LB_RETURN_IF_ERROR(ReadModel(v.path, &v.table));
    if (v.table.tensors.size() != f.table.tensors.size() ||
        v.table.tensor_bytes != f.table.tensor_bytes) {
      return Status::Failed(
          fmt::format("{}: the storage gives a model other than {}", v.path, f.path));
    }
    v.table.expected_checksum = f.table.expected_checksum;
    files_.push_back(std::move(v));
  }
  return Status::Ok();
}

// The storage's own probe (harness/probe/storage_probe.h), under its device class, on the
// model's files where they sit: what `make machines` predicts the storage's runs from. Null
// beside a reason where it could not be taken.
nlohmann::ordered_json StorageRuns::OwnProbe(const std::string& who) const {
  if (kind_ == "tmpfs") {
    return {{"reason", "the model is on a tmpfs, in memory: there is no device to probe cold"}};
  }
  std::vector<std::string> paths;
  for (const PreparedFile& f : files_) {
    for (const ShardInfo& s : f.table.shards) paths.push_back(s.path);
  }
  probe::StorageProbeOptions opts;
  opts.figure_seconds = 1.0;
  const auto t0 = std::chrono::steady_clock::now();
  nlohmann::ordered_json out;
  if (Status s = probe::ProbeStorageDevice(paths, storage_->device(), &out, opts); !s.ok()) {
    fmt::print(stderr, "{}: storage {}: no probe: {}\n", who, storage_->spec().label, s.message());
    return {{"reason", s.message()}};
  }
  // A figure the probe could not measure is null.
  const auto number = [](const nlohmann::ordered_json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
  };
  const double gbps = number(out["ceilings"]["device_limit"], "gb_per_s");
  fmt::print(stderr, "{}: storage {} probed: {:.3f} GB/s, {:.0f} reads/s at most ({:.1f} s)\n", who,
             storage_->spec().label, gbps, number(out, "iops"),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

const PreparedFile* StorageRuns::FileFor(const ExperimentRun& r) const {
  if (!storage_ || r.file >= files_.size()) return nullptr;
  return &files_[r.file];
}

void StorageRuns::Judge(RunPoint* p) const {
  if (!failed_.empty()) {
    p->failed = failed_;
  } else if (kind_ == "tmpfs" && p->cache == "cold") {
    p->unsupported = "the model is on a tmpfs, in memory: there is no device to be cold against "
                     "(warm runs measure it)";
  } else if (fuse_cache_full_ && p->cache == "warm") {
    // Measured: 0.0% resident at every warm start, the file read through the mount just before.
    p->unsupported = "rclone's full VFS cache keeps the model in its cache folder, and the "
                     "kernel's page cache of the mount does not hold it between opens: there is "
                     "no warm state to make (cold runs read rclone's cache after the first)";
  }
}

void StorageRuns::Remove() {
  if (!storage_) return;
  if (!cached_prefix_.empty()) UnregisterServed(cached_prefix_);
  cached_prefix_.clear();
  if (Status s = storage_->Leave(); !s.ok()) {
    fmt::print(stderr, "loadbench: storage {}: {}\n", storage_->spec().label, s.message());
  }
  storage_.reset();
  files_.clear();
}

}  // namespace loadbench
