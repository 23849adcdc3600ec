// fuse: the experiment's server mounted with rclone (`rclone mount`, read-only, in the
// foreground: a child in a process group of its own that dies with the harness, journaled as
// servers are), HTTP as :http: and S3 as :s3: with the keys from the environment; its VFS cache
// off or full (in the storage's folder), its read chunk as given. The model's files are read
// through the mount, at their names relative to the folder the server serves.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "harness/process/child.h"
#include "harness/process/journal.h"
#include "harness/process/program.h"
#include "harness/storage/parts.h"
#include "loaders/base/file_io.h"
#include "loaders/base/units.h"

extern char** environ;

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kMountWithin = std::chrono::seconds(10);

std::string LogTail(const std::string& log) {
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  return LastLines(ss.str(), 4);
}

// rclone's arguments after `rclone mount`: the remote, the mount point, the options.
Status RcloneArgs(const StorageSpec& spec, const Storage::Made& how, const StorageParts& p,
                  std::vector<std::string>* args) {
  const std::string& url = how.server_url;
  std::vector<std::string> remote;
  if (url.starts_with("http://") || url.starts_with("https://")) {
    remote = {":http:", p.root, "--http-url", url};
  } else if (url.starts_with("s3://") && !how.s3_endpoint.empty()) {
    remote = {":s3:" + url.substr(5), p.root,          "--s3-provider", "Other",
              "--s3-env-auth",        "--s3-endpoint", how.s3_endpoint};
  } else {
    return Status::BadInput(fmt::format(
        "a fuse storage mounts the experiment's server (http://ADDR:PORT/, or s3://BUCKET with "
        "its endpoint); given '{}'",
        url));
  }
  const std::string cache = OptionOf(spec, "cache").empty() ? "off" : OptionOf(spec, "cache");
  *args = remote;
  args->insert(args->end(), {"--config", "/dev/null", "--read-only", "--vfs-cache-mode", cache});
  if (cache == "full") args->insert(args->end(), {"--cache-dir", p.folder + "/cache"});
  // rclone's S3 client cannot load AWS_CA_BUNDLE through its own transport (and fails); it is
  // given as rclone's --ca-cert instead, and left out of its environment (RcloneEnvironment).
  if (const char* bundle = std::getenv("AWS_CA_BUNDLE"); bundle != nullptr && *bundle != '\0') {
    args->insert(args->end(), {"--ca-cert", bundle});
  }
  if (const std::string chunk = OptionOf(spec, "chunk"); !chunk.empty()) {
    uint64_t bytes = 0;
    LB_RETURN_IF_ERROR(ParseBytes(chunk, "chunk", &bytes));
    args->insert(args->end(), {"--vfs-read-chunk-size", fmt::format("{}B", bytes)});
  }
  return Status::Ok();
}

// This process's environment without AWS_CA_BUNDLE (RcloneArgs).
std::vector<std::string> RcloneEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with("AWS_CA_BUNDLE=")) env.emplace_back(*e);
  }
  return env;
}

// rclone started in a group of its own (output into `log`), journaled, to be undone.
Status StartRclone(StorageParts* p, std::vector<std::string> argv, const std::string& log) {
  UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log_fd.valid()) return Status::IOErrorFromErrno(log, errno);
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) return Status::IOErrorFromErrno("pipe", errno);
  UniqueFd status_rd(status[0]), status_wr(status[1]);
  std::vector<char*> cargs = CStrings(argv);
  std::vector<std::string> env = RcloneEnvironment();
  std::vector<char*> cenv = CStrings(env);
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.out = setup.err = log_fd.get();
  setup.errno_fd = status_wr.get();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::IOErrorFromErrno("fork", errno);
  if (pid == 0) ExecChild(setup, cargs[0], cargs.data(), cenv.data());
  ::setpgid(pid, pid);  // also here, so that no kill of the group comes before it exists
  const std::string what = fmt::format("{}\t{}", pid, ProcessStartTime(pid));
  TrackLeftover(Leftover::kProcess, what);
  p->undo.push_back({.kind = MadeThing::kProcess, .what = what, .pid = pid});
  status_wr.reset();
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_rd.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  if (n > 0) return Status::IOErrorFromErrno(fmt::format("starting {}", argv[0]), child_errno);
  return Status::Ok();
}

// Until rclone's mount is up (at most 10 s), or rclone ended.
Status WaitMounted(pid_t pid, const std::string& mount, const std::string& log) {
  for (const auto until = Clock::now() + kMountWithin;;) {
    if (MountedAt(mount)) return Status::Ok();
    int wstatus = 0;
    if (ChildExited(pid, &wstatus)) {
      return Status::IOError(fmt::format("rclone ended ({}) before it mounted {}: {}",
                                         DescribeExit(wstatus), mount, LogTail(log)));
    }
    if (Clock::now() > until) {
      return Status::IOError(fmt::format("rclone did not mount {} within {} s: {}", mount,
                                         kMountWithin.count(), LogTail(log)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Every file of the model seen through the mount: rclone finds a file only in its folder's
// listing (S3's, or an HTTP server's index page), and shows a folder it cannot list as empty.
Status SeenThrough(const StorageParts& p, const Storage::Made& how) {
  for (const std::string& f : how.files) {
    const std::string on = PathOnStorage(p, "fuse", f);
    struct stat st {};
    if (::stat(on.c_str(), &st) == 0) continue;
    return Status::IOError(fmt::format(
        "{}: not seen through rclone's mount of {} ({}); rclone finds a file in its folder's "
        "listing, which an HTTP server must serve (nginx: autoindex on)",
        on, how.server_url, std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace

Status EndProcessGroup(pid_t pid) {
  if (pid <= 0) return Status::Ok();
  ::kill(-pid, SIGTERM);  // rclone unmounts and ends
  int wstatus = 0;
  for (const auto until = Clock::now() + std::chrono::seconds(2); !ChildExited(pid, &wstatus);) {
    if (Clock::now() > until) {
      ::kill(-pid, SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Reap(pid);
  std::vector<pid_t> left = ProcessGroupMembers(pid);
  for (const auto until = Clock::now() + std::chrono::seconds(1);
       !left.empty() && Clock::now() < until; left = ProcessGroupMembers(pid)) {
    ::kill(-pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (left.empty()) return Status::Ok();
  return Status::IOError(
      fmt::format("{} process(es) of group {} could not be killed", left.size(), pid));
}

Status MakeFuse(const StorageSpec& spec, const Storage::Made& how, StorageParts* p) {
  std::string rclone;
  LB_RETURN_IF_ERROR(FindTool("rclone", "rclone", &rclone));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-storage", &p->folder));
  LB_RETURN_IF_ERROR(MakeFolder(p, "loadbench-mnt", &p->root));
  std::vector<std::string> args;
  LB_RETURN_IF_ERROR(RcloneArgs(spec, how, *p, &args));
  p->maker = {.program = "rclone", .version = ToolVersion("rclone", "version"), .args = args};
  p->maker.args.insert(p->maker.args.begin(), "mount");
  std::vector<std::string> argv = {rclone, "mount"};
  argv.insert(argv.end(), args.begin(), args.end());
  // Journaled before rclone makes it: a command killed while it is up leaves it dead.
  TrackLeftover(Leftover::kMount, p->root);
  p->undo.push_back({.kind = MadeThing::kMount, .what = p->root});
  const std::string log = p->folder + "/rclone.log";
  const double t0 = SteadyNow();
  LB_RETURN_IF_ERROR(StartRclone(p, argv, log));
  LB_RETURN_IF_ERROR(WaitMounted(p->undo.back().pid, p->root, log));
  SayStep(*p, fmt::format("rclone mounted {}", how.server_url), SecondsSince(t0));
  LB_RETURN_IF_ERROR(SeenThrough(*p, how));
  p->fs = "fuse.rclone";
  p->mount_options = MountOptionsAt(p->root);
  return Status::Ok();
}

}  // namespace loadbench
