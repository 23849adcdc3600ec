// An experiment's [[storage]] axis (harness/storage/storage.h) through a command: every storage
// checked before anything runs; then, as the runs reach each storage's rounds (the plan's
// outermost axis), the storage made with the model's files copied in, its own probe taken,
// its device class applied to the command and so to every reader and ceiling, and removed once
// its runs are done (or the command ends). A storage that cannot be made fails its runs with the
// reason and leaves nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/experiment/file.h"
#include "harness/experiment/point.h"
#include "harness/run/remote_files.h"
#include "harness/storage/storage.h"

namespace loadbench {

class StorageRuns {
 public:
  ~StorageRuns() { Remove(); }

  // Whether every storage of `e` can be made here for a model of `model_bytes` (root, programs,
  // the kernel's file system, free space): kBadInput "WHERE (LABEL): reason", before any run.
  static Status Check(const Experiment& e, uint64_t model_bytes);

  // Run `r`'s storage, made when it is not the one made already (that one removed first).
  // Fails only when the storage that was there cannot be removed; a storage that cannot be made
  // is said and leaves failed() set for its runs.
  Status EnterFor(const Experiment& e, const ExperimentRun& r,
                  const std::vector<PreparedFile>& files, const RemoteFiles& remote,
                  const std::string& who);
  // The file run `r` reads on the storage; null when its storage is the data folder as it is
  // (the caller's own file, or the server's view of it).
  const PreparedFile* FileFor(const ExperimentRun& r) const;
  // The storage made, when there is one now (its device counters go on the records).
  const Storage* storage() const { return storage_.get(); }
  // The point as this storage can run it: failed when it could not be made; a cold run on a
  // tmpfs unsupported (there is no device to be cold against).
  void Judge(RunPoint* p) const;

  // The storage made now, left and removed (said on stderr when it cannot be).
  void Remove();
  // env.json's `storages`: each storage this command made, as made, with its own probe.
  const nlohmann::ordered_json& Env() const { return env_; }
  bool changed() const { return changed_; }
  void ClearChanged() { changed_ = false; }

 private:
  Status Make(const ExperimentStorage& st, const std::vector<PreparedFile>& files,
              const RemoteFiles& remote, const std::string& who);
  Status PrepareOn(const std::vector<PreparedFile>& files);
  nlohmann::ordered_json OwnProbe(const std::string& who) const;

  size_t index_ = static_cast<size_t>(-1);
  std::unique_ptr<Storage> storage_;
  std::vector<PreparedFile> files_;  // the experiment's files on the storage
  std::string failed_, kind_;
  std::string cached_prefix_;     // an overlay's root, registered as kept in its lower layer
  bool fuse_cache_full_ = false;  // a fuse storage with rclone's full VFS cache
  nlohmann::ordered_json env_ = nlohmann::ordered_json::array();
  bool changed_ = false;
};

}  // namespace loadbench
