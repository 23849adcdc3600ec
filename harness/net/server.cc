// A server started and stopped: the spec checked, a temporary folder, the process started in a
// group of its own through the one child set-up, journaled, waited for until it answers HTTP,
// and at the end its whole group ended and its folder removed (server.h). What differs between
// the kinds is in nginx.cc and s3rver.cc.
#include "harness/net/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "harness/net/kinds.h"
#include "harness/process/child.h"
#include "harness/process/journal.h"
#include "harness/process/program.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kReadyWithin = std::chrono::seconds(10);
constexpr auto kTermWithin = std::chrono::seconds(2);
constexpr int kPortTries = 3;  // nginx's port may be taken between its pick and nginx's bind

// An S3 bucket name s3rver takes, and nothing a command line or a path could misread.
bool GoodBucket(const std::string& b) {
  static const std::regex name("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]");
  return std::regex_match(b, name);
}

// The spec checked, its root made absolute and real.
Status CheckSpec(const ServerSpec& spec, std::string* root) {
  if (spec.kind != "http" && spec.kind != "s3" && spec.kind != "s3fs" && spec.kind != "iperf3") {
    return Status::BadInput(fmt::format("server kind {}: not http, s3 or s3fs", spec.kind));
  }
  in_addr any{};
  if (::inet_pton(AF_INET, spec.address.c_str(), &any) != 1) {
    return Status::BadInput(fmt::format("server address {}: not an IPv4 address", spec.address));
  }
  if (spec.kind == "iperf3") return Status::Ok();  // serves no folder
  if (spec.kind == "s3fs" && (spec.buckets.size() != 1 || spec.upstream.empty())) {
    return Status::BadInput("an s3fs mount needs one bucket and the endpoint it is mounted from");
  }
  struct stat st {};
  if (spec.root.empty()) return Status::BadInput("no folder to serve given");
  if (::stat(spec.root.c_str(), &st) != 0) return Status::FromErrno(spec.root, errno);
  if (!S_ISDIR(st.st_mode)) return Status::BadInput(fmt::format("{}: not a folder", spec.root));
  char real[PATH_MAX];
  if (::realpath(spec.root.c_str(), real) == nullptr) return Status::FromErrno(spec.root, errno);
  *root = real;
  if (spec.kind == "s3" && spec.limit_rate > 0) {
    return Status::BadInput("a rate limit is for the http kind only (nginx's limit_rate)");
  }
  if (spec.kind != "http" && spec.limit_rate > 0) {
    return Status::BadInput("a rate limit is for the http kind only (nginx's limit_rate)");
  }
  if (spec.kind == "http" && !spec.buckets.empty()) {
    return Status::BadInput("buckets are for the s3 kind only");
  }
  for (const std::string& b : spec.buckets) {
    if (!GoodBucket(b)) {
      return Status::BadInput(fmt::format(
          "bucket {}: not a bucket name (3 to 63 of a-z, 0-9, '.' and '-', starting and ending "
          "with a letter or digit)",
          b));
    }
  }
  return Status::Ok();
}

// Whether an HTTP server on `address`:`port` answers a request (any status).
bool AnswersHttp(const std::string& address, int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  const timeval limit{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
  const std::string req = fmt::format("GET / HTTP/1.0\r\nHost: {}\r\n\r\n", address);
  if (::send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return false;
  }
  char buf[16] = {};
  size_t got = 0;
  for (ssize_t n; got < 7 && (n = ::recv(fd.get(), buf + got, 15 - got, 0)) > 0;) got += n;
  return std::string_view(buf, got).starts_with("HTTP/1.");
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Status FreeLoopbackPort(int* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno("socket", errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return Status::FromErrno("a free port on 127.0.0.1", errno);
  }
  *port = ntohs(a.sin_port);
  return Status::Ok();
}

std::string VersionIn(const std::string& text) {
  std::smatch m;
  static const std::regex version("[0-9]+\\.[0-9]+(\\.[0-9]+)?");
  return std::regex_search(text, m, version) ? m.str() : "";
}

Status Server::Start(const ServerSpec& spec, std::unique_ptr<Server>* out) {
  std::unique_ptr<Server> s(new Server);
  s->spec_ = spec;
  LB_RETURN_IF_ERROR(CheckSpec(spec, &s->spec_.root));
  LB_RETURN_IF_ERROR(s->MakeTempDir());
  for (int attempt = 1;; ++attempt) {
    ServerLaunch l;
    Status st = spec.kind == "http"     ? PrepareNginx(s->spec_, s->temp_dir_, &l)
                : spec.kind == "s3fs"   ? PrepareS3fs(s->spec_, s->temp_dir_, &l)
                : spec.kind == "iperf3" ? PrepareIperf3(s->spec_, &l)
                                        : PrepareS3rver(s->spec_, s->temp_dir_, &l);
    if (st.ok()) st = s->Launch(l);
    if (st.ok()) {
      *out = std::move(s);
      return Status::Ok();
    }
    const bool taken = st.message().find("Address already in use") != std::string::npos;
    if (!taken || attempt == kPortTries) return st;  // the destructor stops what was started
    LB_RETURN_IF_ERROR(s->EndProcesses());
  }
}

Server::~Server() { (void)Stop(); }

Status Server::MakeTempDir() {
  const std::string name = spec_.kind == "http" ? "nginx"
                           : spec_.kind == "s3" ? "s3rver"
                                                : spec_.kind;
  return MakeJournaledFolder("loadbench-" + name, &temp_dir_);
}

Status Server::Launch(const ServerLaunch& l) {
  program_ = l.name;
  version_ = l.version;
  port_ = l.port;
  config_ = l.config;
  config_text_ = l.config_text;
  const std::string log = temp_dir_ + "/server.log";
  UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!log_fd.valid()) return Status::FromErrno(log, errno);
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd status_rd(status[0]), status_wr(status[1]);
  std::vector<std::string> args = l.argv;
  std::vector<char*> argv = CStrings(args);
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.out = setup.err = log_fd.get();
  setup.errno_fd = status_wr.get();
  UniqueFd netns;
  LB_RETURN_IF_ERROR(OpenNetns(spec_.netns, &netns));
  setup.netns_fd = netns.get();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) ExecChild(setup, l.program.c_str(), argv.data());
  ::setpgid(pid, pid);  // also here, so that no kill of the group comes before it exists
  pid_ = pid;
  start_time_ = ProcessStartTime(pid);  // set at fork, kept across exec
  TrackLeftover(Leftover::kProcess, fmt::format("{}\t{}", pid_, start_time_));
  status_wr.reset();
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_rd.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  if (n > 0) return Status::FromErrno(fmt::format("starting {}", l.program), child_errno);
  LB_RETURN_IF_ERROR(WaitReady());
  if (!l.read_once.empty()) ::unlink(l.read_once.c_str());
  return Status::Ok();
}

std::string Server::LogTail() const {
  std::string text = ReadText(temp_dir_ + "/server.log");
  if (program_ == "nginx") text += ReadText(temp_dir_ + "/error.log");
  return LastLines(text, 4);
}

// Polls until the server answers an HTTP request on its port (s3rver's read from its log).
Status Server::WaitReady() {
  const auto until = Clock::now() + kReadyWithin;
  for (;;) {
    int wstatus = 0;
    if (ChildExited(pid_, &wstatus)) {
      return Status::IOError(fmt::format("{} ended ({}) before it answered: {}", program_,
                                         DescribeExit(wstatus), LogTail()));
    }
    if (spec_.kind == "s3fs" && IsFuseMount(spec_.root)) {
      endpoint_ = spec_.root;
      return Status::Ok();
    }
    if (port_ == 0 && spec_.kind == "s3") {
      port_ = S3rverPortInLog(ReadText(temp_dir_ + "/server.log"), spec_.address);
    }
    if (spec_.kind == "iperf3" && IperfListening(ReadText(temp_dir_ + "/server.log"))) {
      endpoint_ = fmt::format("{}:{}", spec_.address, port_);
      return Status::Ok();
    }
    if (port_ > 0 && spec_.kind != "iperf3" && AnswersHttp(spec_.address, port_)) {
      endpoint_ = fmt::format("http://{}:{}", spec_.address, port_);
      return Status::Ok();
    }
    if (Clock::now() > until) {
      const std::string where = spec_.kind == "s3fs"
                                    ? "mount " + spec_.root
                                    : fmt::format("answer on {}:{}", spec_.address, port_);
      return Status::IOError(fmt::format("{} did not {} within {} s: {}", program_, where,
                                         kReadyWithin.count(), LogTail()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status Server::EndProcesses() {
  if (pid_ <= 0) return Status::Ok();
  cpu_at_stop_ = CpuSeconds();
  // A mount is unmounted first (s3fs then ends by itself); one left by an s3fs that died is
  // detached, so that nothing below its mountpoint is ever reached through a dead mount.
  if (spec_.kind == "s3fs" && IsFuseMount(spec_.root)) ::umount2(spec_.root.c_str(), 0);
  ::kill(-pid_, SIGTERM);  // nginx's master ends its workers and reaps them
  int wstatus = 0;
  for (const auto until = Clock::now() + kTermWithin; !ChildExited(pid_, &wstatus);) {
    if (Clock::now() > until) {
      ::kill(-pid_, SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  rusage usage{};
  Reap(pid_, &usage);
  cpu_at_stop_ = std::max(cpu_at_stop_, usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
                                            usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6);
  std::vector<pid_t> left = ProcessGroupMembers(pid_);
  for (const auto until = Clock::now() + std::chrono::seconds(1);
       !left.empty() && Clock::now() < until; left = ProcessGroupMembers(pid_)) {
    ::kill(-pid_, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (spec_.kind == "s3fs" && IsFuseMount(spec_.root)) ::umount2(spec_.root.c_str(), MNT_DETACH);
  const pid_t pgid = pid_;
  pid_ = -1;
  if (!left.empty()) {  // journaled still: the next command that measures tries again
    return Status::IOError(fmt::format("{}: {} process(es) of group {} could not be killed",
                                       program_, left.size(), pgid));
  }
  UntrackLeftover(Leftover::kProcess, fmt::format("{}\t{}", pgid, start_time_));
  return Status::Ok();
}

Status Server::Stop() {
  Status s = EndProcesses();
  if (temp_dir_.empty()) return s;
  const Status removed = RemoveJournaledFolder(temp_dir_);
  temp_dir_.clear();
  return s.ok() ? removed : s;
}

bool Server::running() const {
  int wstatus = 0;
  return pid_ > 0 && !ChildExited(pid_, &wstatus);
}

double Server::CpuSeconds() const {
  if (pid_ <= 0) return cpu_at_stop_;
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double sum = 0;
  for (const pid_t p : ProcessGroupMembers(pid_)) {
    const std::vector<std::string> f = ProcStatFields(p);
    if (f.size() <= 17) continue;
    sum += std::strtod(f[14].c_str(), nullptr) + std::strtod(f[15].c_str(), nullptr);
    if (p == pid_) {  // and the processes it reaped (nginx's workers that ended)
      sum += std::strtod(f[16].c_str(), nullptr) + std::strtod(f[17].c_str(), nullptr);
    }
  }
  return sum / ticks;
}

nlohmann::ordered_json Server::Env() const {
  nlohmann::ordered_json j = {{"kind", spec_.kind},    {"program", program_}, {"version", version_},
                              {"endpoint", endpoint_}, {"root", spec_.root},  {"config", config_}};
  if (!config_text_.empty()) j["config_text"] = config_text_;
  return j;
}

bool IsFuseMount(const std::string& dir) {
  struct statfs fs {};
  constexpr long kFuseMagic = 0x65735546;  // FUSE_SUPER_MAGIC
  return ::statfs(dir.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == kFuseMagic;
}

std::string Server::ObjectFile(const std::string& bucket, const std::string& key) const {
  if (spec_.kind == "http" || spec_.kind == "s3fs") return fmt::format("{}/{}", spec_.root, key);
  return fmt::format("{}/{}/{}._S3rver_object", spec_.root, bucket, key);
}

}  // namespace loadbench
