// The one child set-up: descriptors where the child expects them, stdio as asked, its own
// process group, and a failed set-up or exec that tells the parent why.
#include "harness/process/child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

// Everything left in `fd` until EOF.
std::string ReadAll(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

struct Pipe {
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    rd.reset(fds[0]);
    wr.reset(fds[1]);
  }
  UniqueFd rd, wr;
};

// Forks a child set up by `s` that runs /bin/sh -c `script`; its pid.
pid_t Spawn(const ChildSetup& s, const char* path, const char* script) {
  const char* argv[] = {"sh", "-c", script, nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) ExecChild(s, path, const_cast<char* const*>(argv));
  return pid;
}

TEST(ChildTest, PlacesDescriptorsAndStdioAndGivesTheGroup) {
  Pipe third, err;
  const int fds[1] = {third.wr.get()};
  ChildSetup s;
  s.parent = ::getpid();
  s.own_group = true;
  s.fds = fds;
  s.nfds = 1;
  s.out = -1;
  s.err = err.wr.get();
  const pid_t pid = Spawn(s, "/bin/sh",
                          "echo three >&3; echo out; echo err >&2; read x || echo eof >&3; "
                          "cut -d' ' -f5 /proc/$$/stat >&3");
  ASSERT_GT(pid, 0);
  third.wr.reset();
  err.wr.reset();
  const std::string got = ReadAll(third.rd.get());
  const int wstatus = Reap(pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  // stdin is /dev/null, and the child leads a process group of its own.
  EXPECT_EQ(got, "three\neof\n" + std::to_string(pid) + "\n");
  EXPECT_EQ(ReadAll(err.rd.get()), "err\n");  // stdout went to /dev/null
}

TEST(ChildTest, AFailedExecSaysWhyOnTheErrnoDescriptor) {
  Pipe status;
  ChildSetup s;
  s.parent = ::getpid();
  s.errno_fd = status.wr.get();
  const pid_t pid = Spawn(s, "/nonexistent/program", "true");
  ASSERT_GT(pid, 0);
  status.wr.reset();
  int child_errno = 0;
  ASSERT_EQ(::read(status.rd.get(), &child_errno, sizeof child_errno),
            static_cast<ssize_t>(sizeof child_errno));
  EXPECT_EQ(child_errno, ENOENT);
  const int wstatus = Reap(pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kChildNoExec) << wstatus;
}

// The time of the exec is the child's, not when a parent that was busy got to read it.
TEST(ChildTest, TellsWhenItCalledExecByItsOwnClock) {
  Pipe clock;
  ChildSetup s;
  s.parent = ::getpid();
  s.exec_clock_fd = clock.wr.get();
  timespec before{}, after{};
  ::clock_gettime(CLOCK_MONOTONIC, &before);
  const pid_t pid = Spawn(s, "/bin/sh", "true");
  ASSERT_GT(pid, 0);
  clock.wr.reset();
  ::usleep(200 * 1000);  // a parent scheduled late
  ::clock_gettime(CLOCK_MONOTONIC, &after);
  timespec at{};
  ASSERT_EQ(::read(clock.rd.get(), &at, sizeof at), static_cast<ssize_t>(sizeof at));
  auto secs = [](const timespec& t) { return static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9; };
  EXPECT_GE(secs(at), secs(before));
  EXPECT_LT(secs(at), secs(after) - 0.1);  // long before the parent looked
  EXPECT_EQ(ReadAll(clock.rd.get()), "");  // once, and closed by the exec
  const int wstatus = Reap(pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
}

TEST(ChildTest, ACgroupThatCannotBeJoinedIsItsOwnExitCode) {
  ChildSetup s;
  s.parent = ::getpid();
  s.cgroup_procs = "/nonexistent/cgroup.procs";
  const pid_t pid = Spawn(s, "/bin/sh", "true");
  ASSERT_GT(pid, 0);
  const int wstatus = Reap(pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kChildNoCgroup) << wstatus;
}

TEST(ChildTest, FindProgramNamesThePackageToInstall) {
  std::string path;
  ASSERT_TRUE(FindProgram("sh", "", &path).ok());
  EXPECT_EQ(path.back(), 'h');
  const Status s = FindProgram("no-such-program-here", "some-package", &path);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported);
  EXPECT_NE(s.message().find("install Debian's some-package"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace loadbench
