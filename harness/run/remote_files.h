// An experiment's [server]: the server started for the command on loopback (nginx serving the
// data folder, or s3rver holding a bucket the files are put into), and each run's file as its
// strategy reaches it: the file itself, or its name through the server (`via`, loaders/use/spec.h).
// A run through the server is recorded under the file's own path, so that it pairs with the
// local runs of the same bytes in the same rounds, with `read_as` naming what it read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/experiment/file.h"
#include "harness/net/server.h"

namespace loadbench {

// How runs of `st` reach the file: its via= when given; a remote strategy (kRemote) through the
// experiment's server; else the file itself ("").
std::string ViaOf(const Experiment& e, const ExperimentStrategy& st);

class RemoteFiles {
 public:
  ~RemoteFiles();

  // Starts the experiment's server, when it has one, for `data_dir`: on loopback, or at
  // `address` in network namespace `netns` (a /run/netns path: a link's far end, a cluster's
  // store). kBadInput for a run that asks for a via without a [server] of that kind.
  Status Start(const Experiment& e, const std::string& data_dir, const std::string& who,
               const std::string& address = "", const std::string& netns = "");
  // The files as the runs read them through the server: each put into the bucket (s3) unless it
  // is there already, its table read through the server and checked against the local one.
  Status Prepare(const Experiment& e, const std::vector<PreparedFile>& files,
                 const std::string& who);
  // The model at local `path` as read through the server (http or s3, not the mount); null when
  // no run reads it so.
  const PreparedFile* ViewOf(const std::string& path) const;
  // The server's port (0 without one).
  int port() const { return server_ ? server_->port() : 0; }
  // The prepared file run `r` reads.
  const PreparedFile& For(const Experiment& e, const std::vector<PreparedFile>& files,
                          const ExperimentRun& r) const;

  bool serving() const { return server_ != nullptr; }
  // The endpoint of the experiment's s3rver, which this process's environment (and so the
  // readers') points at; "" without one.
  std::string s3rver() const { return kind_ == "s3" ? server_->endpoint() : ""; }
  // The server's CPU seconds so far (its processes' user and system time).
  double ServerCpuSeconds() const { return server_ ? server_->CpuSeconds() : 0.0; }
  // The s3fs mount's, when there is one (else nullopt).
  bool mounted() const { return mount_ != nullptr; }
  double MountCpuSeconds() const { return mount_ ? mount_->CpuSeconds() : 0.0; }
  // What a fuse storage (harness/storage/storage.h) mounts: the server's name for the data
  // folder ("http://ADDR:PORT/", "s3://BUCKET/") and, for s3, its endpoint; each of `files`
  // published into the bucket first. The pages read through the mount are checked and dropped
  // at the server, as the s3fs mount's are (`mountpoint`, once mounted: RegisterMount).
  Status MountSource(const std::vector<PreparedFile>& files, const std::string& who,
                     std::string* url, std::string* s3_endpoint) const;
  void RegisterMount(const std::string& mountpoint) const;
  const std::string& data_dir() const { return data_dir_; }
  // env.json's `server`: the server's kind, program, version, endpoint and configuration.
  nlohmann::ordered_json Env() const;

 private:
  Status NameOf(const std::string& local, const std::string& via, std::string* name) const;
  Status Publish(const PreparedFile& local, const std::string& who) const;
  Status Mount(const std::string& who);

  std::unique_ptr<Server> server_;
  std::unique_ptr<Server> mount_;  // s3fs's mount of the bucket, for via = "s3fs"
  std::string mountpoint_;
  std::string kind_, bucket_, data_dir_, prefix_;
  std::map<std::pair<size_t, std::string>, PreparedFile> views_;
};

}  // namespace loadbench
