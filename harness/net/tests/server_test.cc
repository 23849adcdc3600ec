// The servers of harness/net against a small folder: a file fetched whole and by range over
// a raw socket, nothing left once stopped (no process, no folder, no journal line), and a
// server whose harness was SIGKILLed ended by the next CleanLeftovers. A test whose program is
// not installed skips, naming it.
#include "harness/net/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/leftovers/leftovers.h"
#include "harness/process/child.h"
#include "loaders/base/file_io.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

struct Reply {
  int status = 0;
  std::string head, body;
};

// One HTTP/1.1 request to 127.0.0.1:`port` (Connection: close), read to its end.
Reply Get(int port, const std::string& path, const std::string& range = "") {
  Reply r;
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const timeval limit{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return r;
  std::string req =
      fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", path);
  if (!range.empty()) req += "Range: bytes=" + range + "\r\n";
  req += "\r\n";
  if (::send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL) < 0) return r;
  std::string all;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0;) all.append(buf, n);
  const size_t end = all.find("\r\n\r\n");
  if (end == std::string::npos || all.size() < 12) return r;
  r.status = std::atoi(all.c_str() + 9);  // "HTTP/1.1 206 ..."
  r.head = all.substr(0, end);
  r.body = all.substr(end + 4);
  return r;
}

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  return s;
}

ServerSpec Spec(const std::string& kind, const std::string& root, uint64_t limit_rate = 0,
                std::vector<std::string> buckets = {}) {
  ServerSpec spec;
  spec.kind = kind;
  spec.root = root;
  spec.limit_rate = limit_rate;
  spec.buckets = std::move(buckets);
  return spec;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Skips the test when the kind's program is not on PATH.
#define SKIP_WITHOUT(program)                                                                   \
  do {                                                                                          \
    std::string found;                                                                          \
    if (!FindProgram(program, "", &found).ok()) GTEST_SKIP() << program << " is not installed"; \
  } while (0)

// Every test with a lock folder (and so a leftovers journal) of its own.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* before = std::getenv("LOADBENCH_LOCK_DIR");
    before_ = before ? before : "";
    ::setenv("LOADBENCH_LOCK_DIR", dir_.File("locks").c_str(), 1);
    ::mkdir(dir_.File("root").c_str(), 0755);
  }
  void TearDown() override { ::setenv("LOADBENCH_LOCK_DIR", before_.c_str(), 1); }

  std::string Root() const { return dir_.File("root"); }
  // The journal files of the lock folder.
  int Journals() const {
    int n = 0;
    const std::string journals = dir_.File(fmt::format("locks/leftovers-{}", ::geteuid()));
    if (!Exists(journals)) return 0;
    for (const auto& e : std::filesystem::directory_iterator(journals)) {
      n += e.is_regular_file();
    }
    return n;
  }

  // Fetches `url_path`, whose content is `content`, whole and by one range.
  static void ExpectServed(const Server& s, const std::string& url_path,
                           const std::string& content) {
    const Reply whole = Get(s.port(), url_path);
    EXPECT_EQ(whole.status, 200) << whole.head;
    EXPECT_EQ(whole.body, content);
    const Reply part = Get(s.port(), url_path, "1000-1999");
    EXPECT_EQ(part.status, 206) << part.head;
    EXPECT_EQ(part.body, content.substr(1000, 1000));
  }

  // Stops `s` and checks that nothing of it is left.
  void ExpectStoppedClean(Server& s) {
    const pid_t pid = s.pid();
    const std::string temp = s.temp_dir();
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(Exists(temp));
    ASSERT_TRUE(s.Stop().ok());
    EXPECT_NE(::kill(pid, 0), 0) << "its first process is gone";
    EXPECT_TRUE(ProcessGroupMembers(pid).empty()) << "and every process of its group";
    EXPECT_FALSE(Exists(temp)) << temp;
    EXPECT_EQ(Journals(), 0) << "struck off the journal";
    EXPECT_FALSE(s.running());
  }

  test::TempDir dir_;
  std::string before_;
};

TEST_F(ServerTest, NginxServesAFileWholeAndByRangeAndLeavesNothing) {
  SKIP_WITHOUT("nginx");
  const std::string content = Pattern(100000);
  std::ofstream(Root() + "/blob.bin") << content;
  std::unique_ptr<Server> s;
  const ServerSpec spec = Spec("http", Root(), 50 << 20);
  const Status st = Server::Start(spec, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(s->endpoint(), fmt::format("http://127.0.0.1:{}", s->port()));
  ExpectServed(*s, "/blob.bin", content);
  EXPECT_EQ(Get(s->port(), "/").status, 403) << "no listing";
  EXPECT_EQ(s->ObjectFile("", "blob.bin"), Root() + "/blob.bin");
  const nlohmann::ordered_json env = s->Env();
  EXPECT_EQ(env["program"], "nginx");
  EXPECT_FALSE(env["version"].get<std::string>().empty());
  EXPECT_EQ(env["config"]["limit_rate_bytes_per_s"], 50 << 20);
  EXPECT_NE(env["config_text"].get<std::string>().find("limit_rate 52428800;"), std::string::npos);
  EXPECT_NE(env["config_text"].get<std::string>().find("listen 127.0.0.1:"), std::string::npos);
  EXPECT_EQ(ProcessGroupMembers(s->pid()).size(), 2u) << "a master and one worker";
  EXPECT_GE(s->CpuSeconds(), 0);
  ExpectStoppedClean(*s);
}

TEST_F(ServerTest, S3rverServesAnObjectWholeAndByRangeAndLeavesNothing) {
  SKIP_WITHOUT("s3rver");
  const std::string content = Pattern(100000);
  std::unique_ptr<Server> s;
  const ServerSpec spec = Spec("s3", Root(), 0, {"models"});
  const Status st = Server::Start(spec, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(Exists(Root() + "/models")) << "the bucket, made at start";
  EXPECT_NE(Get(s->port(), "/").body.find("<Name>models</Name>"), std::string::npos);
  // An object put in place as s3rver's store lays it out is served.
  const std::string file = s->ObjectFile("models", "dir/blob.bin");
  EXPECT_EQ(file, Root() + "/models/dir/blob.bin._S3rver_object");
  std::filesystem::create_directories(Root() + "/models/dir");
  std::ofstream(file) << content;
  ExpectServed(*s, "/models/dir/blob.bin", content);
  EXPECT_EQ(s->Env()["program"], "s3rver");
  ExpectStoppedClean(*s);
}

// The harness is SIGKILLed while it serves: nginx's master goes with it (PDEATHSIG), its
// worker does not, and the next CleanLeftovers kills the worker and removes the folder.
TEST_F(ServerTest, AServerOfAKilledHarnessIsEndedByTheNextCleanup) {
  SKIP_WITHOUT("nginx");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t harness = ::fork();
  if (harness == 0) {
    std::unique_ptr<Server> s;
    if (!Server::Start(Spec("http", Root()), &s).ok()) ::_exit(1);
    const std::string said = fmt::format("{} {}\n", s->pid(), s->temp_dir());
    (void)!::write(fds[1], said.data(), said.size());
    ::pause();
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[512] = {};
  const ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  ::kill(harness, SIGKILL);
  Reap(harness);
  ASSERT_GT(n, 0) << "the child could not start nginx";
  std::istringstream in(buf);
  pid_t pgid = 0;
  std::string temp;
  in >> pgid >> temp;
  const std::vector<std::string> said = CleanLeftovers();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find(fmt::format("process group {}", pgid)), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("folder " + temp), std::string::npos) << said[0];
  EXPECT_TRUE(ProcessGroupMembers(pgid).empty());
  EXPECT_FALSE(Exists(temp));
  EXPECT_EQ(Journals(), 0);
}

// A journal line is followed only for what this tool makes: a folder line only for a folder of
// loadbench's own, and a process line whose pid now names a younger process kills nothing.
TEST_F(ServerTest, TheCleanupKillsAndRemovesOnlyWhatIsItsOwn) {
  const std::string precious = dir_.File("precious");
  ::mkdir(precious.c_str(), 0755);
  const pid_t me = ::getpid();
  const pid_t ended = ::fork();
  if (ended == 0) {
    TrackLeftover(Leftover::kFolder, precious);
    TrackLeftover(Leftover::kProcess, fmt::format("{}\t1", me));  // this test, as if recycled
    ::_exit(0);
  }
  Reap(ended);
  const std::vector<std::string> said = CleanLeftovers();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("did not touch " + precious), std::string::npos) << said[0];
  EXPECT_TRUE(Exists(precious));
  EXPECT_EQ(Journals(), 0);
}

TEST_F(ServerTest, BadSpecsAreRefusedNamingTheReason) {
  std::unique_ptr<Server> s;
  Status st = Server::Start(Spec("ftp", Root()), &s);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_NE(st.message().find("ftp"), std::string::npos);
  st = Server::Start(Spec("http", Root() + "/absent"), &s);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_NE(st.message().find("absent"), std::string::npos);
  std::ofstream(Root() + "/file") << "x";
  st = Server::Start(Spec("http", Root() + "/file"), &s);
  EXPECT_EQ(st.message(), Root() + "/file: not a folder");
  st = Server::Start(Spec("s3", Root(), 1), &s);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  st = Server::Start(Spec("s3", Root(), 0, {"../up"}), &s);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(Journals(), 0);
}

TEST_F(ServerTest, AProgramNotInstalledIsUnsupportedNamingItsPackage) {
  const char* path = std::getenv("PATH");
  const std::string before = path ? path : "";
  ::setenv("PATH", dir_.path().c_str(), 1);  // nothing there
  std::unique_ptr<Server> s;
  const Status http = Server::Start(Spec("http", Root()), &s);
  const Status s3 = Server::Start(Spec("s3", Root()), &s);
  ::setenv("PATH", before.c_str(), 1);
  EXPECT_EQ(http.code(), Status::Code::kUnsupported);
  EXPECT_NE(http.message().find("nginx-light"), std::string::npos) << http.message();
  EXPECT_EQ(s3.code(), Status::Code::kUnsupported);
  EXPECT_NE(s3.message().find("npm install -g s3rver@3.7.1"), std::string::npos) << s3.message();
  EXPECT_EQ(Journals(), 0) << "the temporary folders were removed and struck off";
}

}  // namespace
}  // namespace loadbench
