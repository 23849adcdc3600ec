#include "harness/profile/profile.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "harness/process/child.h"

namespace loadbench {
namespace {

// The last non-empty line perf wrote to its log: why it failed.
std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last;
}

}  // namespace

Status FindProfiler(std::string* perf) {
  LB_RETURN_IF_ERROR(FindProgram("perf", "linux-perf", perf));
  if (::geteuid() == 0) return Status::Ok();
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int level = 2;
  if (in >> level && level > 1) {
    return Status::Unsupported(fmt::format(
        "kernel.perf_event_paranoid is {}: kernel call chains need 1 or less, or root", level));
  }
  return Status::Ok();
}

Status Profiler::Open() {
  int ctl[2], ack[2];
  if (::pipe2(ctl, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  ctl_rd_.reset(ctl[0]);
  ctl_wr_.reset(ctl[1]);
  if (::pipe2(ack, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  ack_rd_.reset(ack[0]);
  ack_wr_.reset(ack[1]);
  return Status::Ok();
}

Status Profiler::Start(const std::string& perf, pid_t pid, int hz, const std::string& data_path) {
  log_path_ = data_path + ".log";
  const std::string pid_text = std::to_string(pid), hz_text = std::to_string(hz);
  // -D -1: attached disabled, until the worker enables it. -k: samples timed on the worker's
  // own clock, to be matched with its load's window. -N -B: no build-id cache in ~/.debug (a
  // thousand runs would fill it) and no build-id scan at exit; the profile is read on the
  // machine that took it.
  const char* argv[] = {"perf",
                        "record",
                        "-e",
                        "cpu-clock",
                        "-F",
                        hz_text.c_str(),
                        "-g",
                        "-k",
                        "CLOCK_MONOTONIC",
                        "-D",
                        "-1",
                        "--control",
                        "fd:3,4",
                        "-N",
                        "-B",
                        "-p",
                        pid_text.c_str(),
                        "-o",
                        data_path.c_str(),
                        nullptr};
  UniqueFd log(::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!log.valid()) return Status::FromErrno(log_path_, errno);
  const int fds[2] = {ctl_rd_.get(), ack_wr_.get()};
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.fds = fds;
  setup.nfds = 2;
  setup.out = setup.err = log.get();
  const pid_t child = ::fork();
  if (child == 0) ExecChild(setup, perf.c_str(), const_cast<char* const*>(argv));
  const int err = errno;
  // The worker holds its own ends; perf holds the others. Only a copy of the control pipe's
  // write end stays here until perf exits: perf 6.1 fails at exit, writing no profile, when
  // its control pipe hangs up ("Thread and evlist pollfd index mismatch"), as it would when
  // the worker exits holding the only write end.
  ctl_rd_.reset();
  ack_rd_.reset();
  ack_wr_.reset();
  if (child < 0) return Status::FromErrno("fork for perf", err);
  pid_ = child;
  return Status::Ok();
}

Status Profiler::Finish(double timeout_s) {
  if (pid_ <= 0) return Status::Failed("perf was not started");
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int wstatus = 0;
  pid_t got = 0;
  while ((got = ::waitpid(pid_, &wstatus, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (got == 0) {
    Kill();
    return Status::Failed(fmt::format("perf did not exit {:.0f} s after the worker", timeout_s));
  }
  ::kill(-pid_, SIGKILL);  // anything perf started goes with it
  pid_ = -1;
  ctl_wr_.reset();
  if (got > 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::Ok();
  std::string why = LastLine(log_path_);
  if (got > 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127 && why.empty()) {
    why = "perf could not be started";
  }
  return Status::Failed(fmt::format("perf record failed: {}", why.empty() ? "no message" : why));
}

void Profiler::Kill() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  Reap(pid_);
  pid_ = -1;
  ctl_wr_.reset();
}

bool ProfileControl(int ctl_fd, int ack_fd, const char* command) {
  const std::string line = std::string(command) + "\n";
  if (::write(ctl_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return false;  // EPIPE: perf is gone (SIGPIPE is ignored in the worker)
  }
  // perf answers within milliseconds once attached; one that has not in 30 s is stuck, and the
  // load goes on unprofiled rather than wait for it.
  pollfd p = {ack_fd, POLLIN, 0};
  int r;
  while ((r = ::poll(&p, 1, 30000)) < 0 && errno == EINTR) {
  }
  if (r <= 0) return false;
  char buf[16];
  ssize_t n;
  while ((n = ::read(ack_fd, buf, sizeof buf)) < 0 && errno == EINTR) {
  }
  return n > 0;
}

}  // namespace loadbench
