#include "tests/support/run_cli.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace loadbench::test {
namespace {

// The machine lock and the leftovers journals of everything the tests run, in the test process
// and in the binaries it starts, go to a folder beside the binary: the tests neither wait for a
// measurement running on this machine nor block one (tests of the locks set their own).
const bool kTestLockDir = [] {
  std::string dir = LOADBENCH_BINARY;
  dir = dir.substr(0, dir.rfind('/')) + "/test-locks";
  return ::setenv("LOADBENCH_LOCK_DIR", dir.c_str(), /*overwrite=*/0) == 0;
}();

}  // namespace

ProcessResult RunLoadbench(const std::vector<std::string>& args,
                           const std::function<void(const std::string&, pid_t)>& on_stderr,
                           std::chrono::milliseconds limit) {
  ProcessResult r;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return r;
  }
  std::vector<std::string> argv_s = {LOADBENCH_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec. dup2 clears O_CLOEXEC on 0, 1 and 2.
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(out_pipe[1], 1) < 0 ||
        ::dup2(err_pipe[1], 2) < 0) {
      ::_exit(126);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  const auto deadline = std::chrono::steady_clock::now() + limit;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    const int n = ::poll(fds, 2, 200);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative fds
        --open_fds;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(got));
      if (i == 1 && on_stderr) on_stderr(r.err, pid);
    }
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  EXPECT_FALSE(killed) << "loadbench did not finish within " << limit.count() << " ms";
  return r;
}

std::string Describe(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + ", signal " + std::to_string(r.signal) +
         "\n--- stdout ---\n" + r.out + "--- stderr ---\n" + r.err;
}

int RunLoadbenchInto(const std::string& dir, const std::string& args) {
  const std::string cmd = std::string(LOADBENCH_BINARY) + " " + args + " >" + dir +
                          "/stdout.txt 2>" + dir + "/stderr.txt";
  const int st = std::system(cmd.c_str());
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WEXITSTATUS(st);
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<nlohmann::json> ReadRuns(const std::string& out_dir) {
  std::vector<nlohmann::json> runs;
  std::ifstream in(out_dir + "/runs.jsonl");
  std::string line;
  while (std::getline(in, line)) runs.push_back(nlohmann::json::parse(line));
  return runs;
}

}  // namespace loadbench::test
