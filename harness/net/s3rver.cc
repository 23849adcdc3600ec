// The s3 kind: s3rver (the npm package, 3.7.1), an S3 API over a folder whose subfolders are
// its buckets, on 127.0.0.1 at a port of its own choosing, read back from what it prints.
// It takes any well-formed signature of access key S3RVER (--allow-mismatched-signatures).
#include <stdlib.h>

#include <charconv>

#include <fmt/format.h>

#include "harness/net/kinds.h"
#include "harness/process/child.h"
#include "harness/process/program.h"

namespace loadbench {
namespace {

constexpr const char* kInstall = "install the npm package s3rver (npm install -g s3rver@3.7.1)";

}  // namespace

Status PrepareS3rver(const ServerSpec& spec, const std::string& temp_dir, ServerLaunch* out) {
  (void)temp_dir;  // s3rver keeps nothing but its objects, in spec.root; its log is the server's
  ServerLaunch l;
  l.name = "s3rver";
  if (Status s = FindProgram("s3rver", "", &l.program); !s.ok()) {
    return Status::Unsupported(fmt::format("{}; {}", s.message(), kInstall));
  }
  std::string said;
  LB_RETURN_IF_ERROR(RunToEnd({.argv = {l.program, "--version"}, .timeout_s = 10}, &said));
  l.version = VersionIn(said);
  l.argv = {l.program, "--address", spec.address,
            "--port",  "0",         "--directory",
            spec.root, "--silent",  "--allow-mismatched-signatures"};
  for (const std::string& b : spec.buckets) {
    l.argv.push_back("--configure-bucket");
    l.argv.push_back(b);
  }
  l.config = {{"buckets", spec.buckets},
              {"access_key_id", kS3rverKey},
              {"secret_access_key", kS3rverKey},
              {"signatures_checked", false},
              {"vhost_buckets", true}};
  *out = std::move(l);
  return Status::Ok();
}

void PointAtS3rver(const std::string& endpoint) {
  ::setenv("AWS_ENDPOINT_URL", endpoint.c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", kS3rverKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kS3rverKey, 1);
  ::setenv("LOADBENCH_S3_ADDRESSING", "path", 1);
  ::unsetenv("AWS_ENDPOINT_URL_S3");
  ::unsetenv("AWS_SESSION_TOKEN");
}

int S3rverPortInLog(const std::string& log, const std::string& address) {
  const std::string mark = fmt::format("S3rver listening on {}:", address);
  const size_t at = log.find(mark);
  if (at == std::string::npos) return 0;
  const char* begin = log.data() + at + mark.size();
  int port = 0;
  const auto [end, ec] = std::from_chars(begin, log.data() + log.size(), port);
  // The whole line: a number cut off mid-write is not the port.
  if (ec != std::errc() || end == log.data() + log.size() || *end != '\n') return 0;
  return port;
}

}  // namespace loadbench
