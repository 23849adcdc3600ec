// Real servers on this machine for remote models: nginx serving a folder over HTTP, s3rver
// serving a folder as S3 buckets. Each listens on 127.0.0.1 only, on a port free when it
// starts, runs in a process group of its own through the one child set-up (harness/process/
// child.h), is journaled as a leftover so that a killed harness never leaves one running, and
// is stopped, with the temporary folder that holds its configuration and logs, when its Server
// goes. Tests and experiments get one with Server::Start, or from the command line with
// `loadbench serve`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench {

struct ServerLaunch;  // harness/net/kinds.h

// s3rver's own keys (ID and secret): it takes no others, and they are public, the same in every
// build of loadbench, so that they are no one's secret.
inline constexpr const char* kS3rverKey = "S3RVER";

// Points this process's environment, which its workers and commands inherit, at the s3rver at
// `endpoint`: AWS_ENDPOINT_URL, s3rver's keys, path-style addressing (AWS_ENDPOINT_URL_S3 and
// AWS_SESSION_TOKEN unset). The runner of an experiment with its own s3rver does it, and every
// other rank of an MPI job when rank 0's run message names that server (launch/ranks.h).
void PointAtS3rver(const std::string& endpoint);

// What to serve, and how.
struct ServerSpec {
  std::string kind;         // "http" (nginx), "s3" (s3rver), "s3fs" (a mount of a bucket), or
                            // "iperf3" (its server: a link's ceiling, harness/net/iperf.h)
  std::string root;         // http: the folder served; s3: s3rver's --directory (buckets are
                            // folders in it)
  uint64_t limit_rate = 0;  // http only: nginx limit_rate, bytes/s per connection; 0 = none
  // http only: folder listings (nginx autoindex), for an rclone mount of the server, which finds
  // files through them (harness/storage/storage.h, a fuse storage); off otherwise.
  bool listings = false;
  std::vector<std::string> buckets;  // s3: buckets to create at start (--configure-bucket)
  std::string upstream;  // s3fs only: the S3 endpoint the bucket (buckets[0]) is mounted from
  // Where it listens: 127.0.0.1, or the server's end of a link (harness/net/link.h), in that
  // link's network namespace (its /run/netns path; "" for this one).
  std::string address = "127.0.0.1";
  std::string netns;
};

// A started server; the destructor stops it. Started from a thread that outlives it: the
// server is killed when the thread that started it ends (PR_SET_PDEATHSIG).
class Server {
 public:
  // Starts the server and returns once it answers an HTTP request (at most 10 s). kBadInput: a
  // spec that names no folder, an unknown kind, an option of the other kind; kUnsupported:
  // the program is not installed (naming the package that has it); kIOError: it did not
  // start or answer (naming the program and its last lines of output).
  static Status Start(const ServerSpec& spec, std::unique_ptr<Server>* out);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // "http://ADDRESS:PORT"; iperf3's "ADDRESS:PORT"
  const std::string& endpoint() const { return endpoint_; }
  int port() const { return port_; }
  // The server's first process, whose pid is its process group's; -1 once stopped.
  pid_t pid() const { return pid_; }
  // Whether its first process still runs (false once stopped, or when it ended by itself).
  bool running() const;
  // The temporary folder of its configuration and logs ("" once stopped).
  const std::string& temp_dir() const { return temp_dir_; }

  // What was served and how, for env.json: {"kind", "program", "version", "endpoint", "root",
  // "config": {...}} and for nginx "config_text", the generated configuration.
  nlohmann::ordered_json Env() const;

  // The local file the server reads for an object: http: ROOT/KEY (`bucket` unused); s3:
  // ROOT/BUCKET/KEY._S3rver_object (s3rver 3.7.1's FilesystemStore).
  std::string ObjectFile(const std::string& bucket, const std::string& key) const;

  // CPU seconds (user + system) the server's processes have used so far: every process of its
  // group, and the processes its first one has reaped. Once stopped: as at the stop.
  double CpuSeconds() const;

  // Stops it: SIGTERM to the group, SIGKILL to what is left after 2 s, the first process
  // reaped, the temporary folder removed, both struck off the leftovers journal. Idempotent.
  Status Stop();

 private:
  Server() = default;
  Status MakeTempDir();
  Status Launch(const ServerLaunch& l);
  Status WaitReady();
  // Ends the process group and reaps its first process (the temporary folder stays).
  Status EndProcesses();
  std::string LogTail() const;

  ServerSpec spec_;
  std::string program_, version_, temp_dir_, endpoint_, config_text_;
  nlohmann::ordered_json config_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string start_time_;  // /proc/PID/stat field 22 of pid_: its journal line
  double cpu_at_stop_ = 0;
};

}  // namespace loadbench
