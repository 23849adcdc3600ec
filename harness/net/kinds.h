// Inside harness/net: what each kind of server (nginx.cc, s3rver.cc, s3fs.cc, iperf.cc)
// prepares before server.cc starts it, and the small helpers they share.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/net/server.h"
#include "loaders/base/status.h"

namespace loadbench {

// One kind's server, ready to be started.
struct ServerLaunch {
  std::string program;            // the path found on PATH
  std::string name;               // "nginx", "s3rver": for messages
  std::string version;            // as the program says ("1.22.1")
  std::vector<std::string> argv;  // argv[0] first
  int port = 0;                   // 0: the server picks one and names it in its log (s3rver)
  std::string config_text;        // nginx: the configuration it runs with
  nlohmann::ordered_json config;  // Env()'s "config"
  // A file of credentials the program reads once at its start (s3fs's password file): removed
  // as soon as the server is up, so that a command killed while it serves leaves none behind.
  std::string read_once;
};

// nginx serving spec.root read-only at / on a free port, its configuration, pid file, logs and
// temporary paths in `temp_dir`; the configuration checked with `nginx -t` first.
Status PrepareNginx(const ServerSpec& spec, const std::string& temp_dir, ServerLaunch* out);
// s3rver on 127.0.0.1, port 0 (its own pick, read back from its log), spec.root its directory,
// spec.buckets created at start.
Status PrepareS3rver(const ServerSpec& spec, const std::string& temp_dir, ServerLaunch* out);
// s3fs mounting spec.buckets[0] of spec.upstream at spec.root, in the foreground.
Status PrepareS3fs(const ServerSpec& spec, const std::string& temp_dir, ServerLaunch* out);
// Whether `dir` is a FUSE mount now.
bool IsFuseMount(const std::string& dir);
// The port s3rver's log says it listens on ("S3rver listening on ADDRESS:PORT"); 0 before.
int S3rverPortInLog(const std::string& log, const std::string& address);
// iperf3's server on spec.address at a free port, in the foreground.
Status PrepareIperf3(const ServerSpec& spec, ServerLaunch* out);
// Whether iperf3's log says it listens ("Server listening on PORT").
bool IperfListening(const std::string& log);

// A TCP port of 127.0.0.1 free at this moment (the kernel's pick for a bind to port 0).
Status FreeLoopbackPort(int* port);
// The first "N.N.N" version number in `text`, "" when none.
std::string VersionIn(const std::string& text);

}  // namespace loadbench
