#include "harness/run/remote_files.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "harness/cache/served.h"
#include "harness/process/journal.h"
#include "harness/record/results.h"
#include "loaders/format/checksum.h"
#include "loaders/format/model.h"
#include "loaders/remote/put.h"
#include "loaders/strategy/registry.h"

namespace loadbench {
namespace {

// s3rver's layout: an object KEY of a bucket is the file BUCKET/KEY._S3rver_object under its
// folder.
constexpr const char* kS3rverSuffix = "._S3rver_object";

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace

std::string ViaOf(const Experiment& e, const ExperimentStrategy& st) {
  if (!st.spec.via.empty()) return st.spec.via;
  const StrategyInfo* info = FindStrategy(st.spec.name);
  if (info != nullptr && (info->flags & kRemote) && !e.server.kind.empty()) return e.server.kind;
  return "";
}

RemoteFiles::~RemoteFiles() {
  if (mount_) UnregisterServed(mountpoint_ + "/");
  if (mount_) (void)mount_->Stop();
  // Empty once unmounted, else kept, and journaled still for the next command to detach.
  if (!mountpoint_.empty() && ::rmdir(mountpoint_.c_str()) == 0) {
    UntrackLeftover(Leftover::kMount, mountpoint_);
  }
  if (!prefix_.empty()) UnregisterServed(prefix_);
  if (server_) (void)server_->Stop();
}

Status RemoteFiles::Start(const Experiment& e, const std::string& data_dir, const std::string& who,
                          const std::string& address, const std::string& netns) {
  for (const ExperimentStrategy& st : e.strategies) {
    const std::string via = ViaOf(e, st);
    if (via.empty() || via == e.server.kind || (via == "s3fs" && e.server.kind == "s3")) continue;
    return Status::BadInput(fmt::format("{}: {} reads via {}, which needs [server] kind = \"{}\"{}",
                                        e.path.empty() ? who : e.path, st.spec.text, via,
                                        via == "s3fs" ? "s3" : via,
                                        via == "s3fs" ? " (the bucket is mounted)" : ""));
  }
  if (e.server.kind.empty()) return Status::Ok();
  kind_ = e.server.kind;
  bucket_ = e.server.bucket;
  data_dir_ = std::filesystem::absolute(data_dir).lexically_normal().string();
  // The server serves the data folder, where the experiment's files are generated (or copied):
  // made here when it does not exist yet, as generation would make it.
  LB_RETURN_IF_ERROR(MakeDirs(data_dir_));
  ServerSpec spec;
  spec.kind = kind_;
  spec.root = data_dir_;
  spec.limit_rate = e.server.limit_rate;
  for (const ExperimentStorage& st : e.storages) spec.listings |= st.spec.kind == "fuse";
  if (!address.empty()) spec.address = address;
  spec.netns = netns;
  if (kind_ == "s3") {
    spec.root = data_dir_ + "/s3rver";
    spec.buckets = {bucket_};
    LB_RETURN_IF_ERROR(MakeDirs(spec.root));
  }
  LB_RETURN_IF_ERROR(Server::Start(spec, &server_));
  fmt::print(stderr, "{}: serving {} at {} ({} {})\n", who, spec.root, server_->endpoint(),
             server_->Env().value("program", kind_), server_->Env().value("version", ""));
  if (kind_ == "s3") {
    PointAtS3rver(server_->endpoint());
    prefix_ = fmt::format("s3://{}/", bucket_);
    RegisterServed(prefix_, spec.root + "/" + bucket_, kS3rverSuffix);
    for (const ExperimentStrategy& st : e.strategies) {
      if (ViaOf(e, st) == "s3fs" && !mount_) LB_RETURN_IF_ERROR(Mount(who));
    }
  } else {
    prefix_ = server_->endpoint() + "/";
    RegisterServed(prefix_, data_dir_, "");
  }
  return Status::Ok();
}

// The bucket mounted with s3fs on an empty folder of its own (never inside another folder the
// command removes: a folder removed through a live mount would delete the bucket's objects).
Status RemoteFiles::Mount(const std::string& who) {
  std::string tmpl = "/tmp/loadbench-s3fs-mount-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno(tmpl, errno);
  mountpoint_ = tmpl;
  // Journaled before the mount: a command killed while it is up leaves it dead, and the next
  // command that measures detaches it.
  TrackLeftover(Leftover::kMount, mountpoint_);
  ServerSpec spec;
  spec.kind = "s3fs";
  spec.root = mountpoint_;
  spec.buckets = {bucket_};
  spec.upstream = server_->endpoint();
  LB_RETURN_IF_ERROR(Server::Start(spec, &mount_));
  // What runs read through the mount is checked and dropped at the server: a FUSE file's pages
  // are the mount's to keep or drop (s3fs drops them at every open).
  RegisterServed(mountpoint_ + "/", data_dir_ + "/s3rver/" + bucket_, kS3rverSuffix);
  fmt::print(stderr, "{}: bucket {} mounted at {} (s3fs {})\n", who, bucket_, mountpoint_,
             mount_->Env().value("version", ""));
  return Status::Ok();
}

Status RemoteFiles::NameOf(const std::string& local, const std::string& via,
                           std::string* name) const {
  // Shard paths are as the model's table names them: relative where the model was given so.
  const std::filesystem::path rel =
      std::filesystem::absolute(local).lexically_normal().lexically_relative(data_dir_);
  if (rel.empty() || *rel.begin() == "..") {
    return Status::BadInput(fmt::format(
        "{}: only files in the data folder {} can be served; generate it there or copy it in",
        local, data_dir_));
  }
  if (via == "s3fs") {
    *name = mountpoint_ + "/" + rel.string();
  } else {
    *name = (via == "s3" ? prefix_ : server_->endpoint() + "/") + rel.string();
  }
  return Status::Ok();
}

// Every file of the model into the bucket: the index (a sharded model's) and each shard, each
// under its path in the data folder, unless the object there has its size and checksum.
Status RemoteFiles::Publish(const PreparedFile& local, const std::string& who) const {
  std::vector<std::pair<std::string, std::string>> files;  // path, checksum
  for (const ShardInfo& s : local.table.shards) {
    uint64_t sum = 0;
    if (s.expected_checksum) {
      sum = *s.expected_checksum;
    } else {
      std::unique_ptr<FileSource> src;
      LB_RETURN_IF_ERROR(FileSource::Open(s.path, &src));
      LB_RETURN_IF_ERROR(
          ChecksumFile(*src, ShardTable(local.table, &s - &local.table.shards[0]), &sum));
    }
    files.emplace_back(s.path, Hex(sum));
  }
  if (local.table.sharded() && local.path != local.table.shards[0].path) {
    files.emplace_back(local.path, Hex(*local.table.expected_checksum));
  }
  for (const auto& [path, sum] : files) {
    std::string name;
    LB_RETURN_IF_ERROR(NameOf(path, "s3", &name));
    bool put = false;
    LB_RETURN_IF_ERROR(PutIfChanged(path, name, sum, &put));
    fmt::print(stderr, "{}: {} {}\n", who, put ? "put" : "already in the bucket:", name);
  }
  return Status::Ok();
}

Status RemoteFiles::Prepare(const Experiment& e, const std::vector<PreparedFile>& files,
                            const std::string& who) {
  for (const ExperimentRun& r : e.runs) {
    if (IsCeilingRun(e, r)) continue;  // a ceiling reads the local file, or the server's view
    const std::string via = ViaOf(e, e.strategies[r.strategy]);
    if (via.empty() || views_.count({r.file, via})) continue;
    const PreparedFile& local = files[r.file];
    if (via == "s3" || via == "s3fs") LB_RETURN_IF_ERROR(Publish(local, who));
    PreparedFile v = local;
    LB_RETURN_IF_ERROR(NameOf(local.path, via, &v.read_as));
    LB_RETURN_IF_ERROR(ReadModel(v.read_as, &v.table));
    if (v.table.tensors.size() != local.table.tensors.size() ||
        v.table.tensor_bytes != local.table.tensor_bytes) {
      return Status::Failed(
          fmt::format("{}: the server gives a model other than {}", v.read_as, local.path));
    }
    v.table.expected_checksum = local.table.expected_checksum;
    views_.emplace(std::make_pair(r.file, via), std::move(v));
  }
  return Status::Ok();
}

const PreparedFile& RemoteFiles::For(const Experiment& e, const std::vector<PreparedFile>& files,
                                     const ExperimentRun& r) const {
  if (IsCeilingRun(e, r)) return files[r.file];
  const auto it = views_.find({r.file, ViaOf(e, e.strategies[r.strategy])});
  return it == views_.end() ? files[r.file] : it->second;
}

const PreparedFile* RemoteFiles::ViewOf(const std::string& path) const {
  for (const auto& [key, view] : views_) {
    if (key.second != "s3fs" && view.path == path) return &view;
  }
  return nullptr;
}

Status RemoteFiles::MountSource(const std::vector<PreparedFile>& files, const std::string& who,
                                std::string* url, std::string* s3_endpoint) const {
  if (!server_) return Status::BadInput("a fuse storage needs the experiment's [server]");
  if (kind_ == "s3") {
    for (const PreparedFile& f : files) LB_RETURN_IF_ERROR(Publish(f, who));
    *s3_endpoint = server_->endpoint();
  }
  *url = prefix_;
  return Status::Ok();
}

void RemoteFiles::RegisterMount(const std::string& mountpoint) const {
  if (kind_ == "s3") {
    RegisterServed(mountpoint + "/", data_dir_ + "/s3rver/" + bucket_, kS3rverSuffix);
  } else {
    RegisterServed(mountpoint + "/", data_dir_, "");
  }
}

nlohmann::ordered_json RemoteFiles::Env() const {
  if (!server_) return nullptr;
  nlohmann::ordered_json j = server_->Env();
  if (kind_ == "s3") j["bucket"] = bucket_;
  if (mount_) j["mount"] = mount_->Env();
  return j;
}

}  // namespace loadbench
