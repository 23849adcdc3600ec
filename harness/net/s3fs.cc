// The s3fs kind: a FUSE mount of a bucket (s3fs-fuse, Debian's s3fs) at spec.root, an empty
// folder the caller made, from the S3 endpoint spec.upstream, path-style, with s3fs's local
// cache off (no use_cache): every read the kernel's page cache misses is a ranged GET. Its
// password file (the endpoint's keys, from the environment, mode 0600) is in the temporary
// folder until the mount is up, its log for as long as it runs.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>

#include <fmt/format.h>

#include "harness/net/kinds.h"
#include "harness/process/child.h"
#include "harness/process/program.h"
#include "loaders/base/file_io.h"

namespace loadbench {

Status PrepareS3fs(const ServerSpec& spec, const std::string& temp_dir, ServerLaunch* out) {
  ServerLaunch l;
  l.name = "s3fs";
  LB_RETURN_IF_ERROR(FindProgram("s3fs", "s3fs", &l.program));
  std::string said;
  LB_RETURN_IF_ERROR(RunToEnd({.argv = {l.program, "--version"}, .timeout_s = 10}, &said));
  l.version = VersionIn(said);
  const char* id = std::getenv("AWS_ACCESS_KEY_ID");
  const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (id == nullptr || secret == nullptr) {
    return Status::BadInput("an s3fs mount needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  const std::string passwd = temp_dir + "/passwd";
  UniqueFd fd(::open(passwd.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::FromErrno(passwd, errno);
  const std::string line = fmt::format("{}:{}\n", id, secret);
  LB_RETURN_IF_ERROR(WriteExact(fd.get(), passwd, line.data(), line.size()));
  l.argv = {l.program, spec.buckets.at(0),      spec.root, "-f",
            "-o",      "url=" + spec.upstream,  "-o",      "use_path_request_style",
            "-o",      "passwd_file=" + passwd, "-o",      "dbglevel=warn"};
  l.read_once = passwd;
  l.config = {{"bucket", spec.buckets.at(0)},
              {"upstream", spec.upstream},
              {"mountpoint", spec.root},
              {"use_cache", false},
              {"path_style", true}};
  *out = std::move(l);
  return Status::Ok();
}

}  // namespace loadbench
