#include "harness/process/program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "harness/process/child.h"
#include "harness/process/interrupt.h"
#include "loaders/base/file_io.h"

extern char** environ;

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

// Starts `r` with its stdout (and stderr) into `out`; the child is a group of its own.
Status Start(const ProgramRun& r, int out, pid_t* pid) {
  UniqueFd ns;
  LB_RETURN_IF_ERROR(OpenNetns(r.netns, &ns));
  std::vector<std::string> args = r.argv;
  std::vector<char*> cargs = CStrings(args);
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.out = out;
  setup.err = r.stderr_too ? out : -1;
  setup.netns_fd = ns.get();
  *pid = ::fork();
  if (*pid < 0) return Status::FromErrno("fork for " + r.argv[0], errno);
  if (*pid == 0) ExecChild(setup, cargs[0], cargs.data());
  ::setpgid(*pid, *pid);
  return Status::Ok();
}

}  // namespace

Status RunToEnd(const ProgramRun& r, std::string* output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd rd(fds[0]), wr(fds[1]);
  pid_t pid = -1;
  LB_RETURN_IF_ERROR(Start(r, wr.get(), &pid));
  wr.reset();
  output->clear();
  const auto until = Clock::now() + std::chrono::duration<double>(r.timeout_s);
  bool late = false, stopped = false;
  for (char buf[1 << 16];;) {
    pollfd p{rd.get(), POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      const ssize_t n = ::read(rd.get(), buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
      if (n > 0) output->append(buf, static_cast<size_t>(n));
    }
    if ((late = r.timeout_s > 0 && Clock::now() > until)) break;
    if ((stopped = r.stop_on_interrupt && Interrupted())) break;
  }
  ::kill(-pid, SIGKILL);  // done, late or stopped: nothing of its group outlives it
  const int wstatus = Reap(pid);
  if (stopped) return Status::Failed("interrupted");
  if (late) return Status::IOError(fmt::format("{} ran past {} s", r.argv[0], r.timeout_s));
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::Ok();
  return Status::IOError(
      fmt::format("{} ended with {}: {}", r.argv[0], DescribeExit(wstatus), LastLines(*output, 4)));
}

Status OpenNetns(const std::string& path, UniqueFd* fd) {
  if (path.empty()) return Status::Ok();
  fd->reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return fd->valid() ? Status::Ok() : Status::FromErrno(path, errno);
}

std::string LastLines(const std::string& text, int n) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string out;
  for (size_t i = lines.size() > static_cast<size_t>(n) ? lines.size() - n : 0; i < lines.size();
       ++i) {
    out += (out.empty() ? "" : " | ") + lines[i];
  }
  return out.empty() ? "(no output)" : out;
}

bool ChildExited(pid_t pid, int* wstatus) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid != pid) {
    return false;
  }
  *wstatus = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0) : info.si_status;
  return true;
}

std::string DescribeExit(int wstatus) {
  if (WIFSIGNALED(wstatus)) return fmt::format("killed by signal {}", WTERMSIG(wstatus));
  return fmt::format("exit code {}", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(vars.begin(), vars.end(), [&](const std::string& v) {
      return entry.starts_with(std::string_view(v).substr(0, v.find('=') + 1));
    });
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), vars.begin(), vars.end());
  return env;
}

}  // namespace loadbench
