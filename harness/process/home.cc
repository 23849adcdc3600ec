#include "harness/process/home.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "harness/process/child.h"
#include "harness/process/program.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

// The package's marker: a folder that holds it holds the tool's files.
bool HoldsAnalysis(const std::string& dir) {
  return !dir.empty() && ::access((dir + "/analysis/__init__.py").c_str(), R_OK) == 0;
}

std::string Normal(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

}  // namespace

std::string ExePath() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.string();
}

Status LoadbenchHome(std::string* home) {
  if (const char* v = std::getenv("LOADBENCH_HOME"); v != nullptr && *v != '\0') {
    if (!HoldsAnalysis(v)) {
      return Status::BadInput(fmt::format(
          "LOADBENCH_HOME={}: no analysis/__init__.py there (it names the folder that holds "
          "analysis/, loaders/peers/ and experiments/; unset it to use this binary's own)",
          v));
    }
    *home = Normal(v);
    return Status::Ok();
  }
  const std::string exe = ExePath();
  const std::string installed =
      exe.empty() ? "" : Normal((fs::path(exe).parent_path() / "../share/loadbench").string());
  for (const std::string& dir : {installed, std::string(LOADBENCH_SOURCE_TREE)}) {
    if (HoldsAnalysis(dir)) {
      *home = dir;
      return Status::Ok();
    }
  }
  return Status::BadInput(fmt::format(
      "the tool's files (analysis/, loaders/peers/, experiments/) are in none of {}{}; set "
      "LOADBENCH_HOME to the folder that holds them",
      installed.empty() ? "" : installed + " and ", LOADBENCH_SOURCE_TREE));
}

Status MakeAnalysisCommand(const std::string& module, const std::vector<std::string>& args,
                           AnalysisCommand* out) {
  AnalysisCommand c;
  std::string home;
  LB_RETURN_IF_ERROR(LoadbenchHome(&home));
  // Debian's interpreter first: it sees the python3-pandas and the like that setup.sh installs.
  c.python = "/usr/bin/python3";
  if (::access(c.python.c_str(), X_OK) != 0) {
    LB_RETURN_IF_ERROR(FindProgram("python3", "python3", &c.python));
  }
  c.argv = {c.python, "-m", "analysis." + module};  // argv[0] a path: sys.executable is it
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  // PYTHONSAFEPATH (3.11 on): `-m` puts no working folder before the home, so that an
  // analysis/ folder where the command runs (a checkout of another version) is not the one run.
  const char* path = std::getenv("PYTHONPATH");
  c.env =
      EnvironmentWith({"PYTHONPATH=" + home + (path && *path ? ":" + std::string(path) : ""),
                       "PYTHONSAFEPATH=1", "LOADBENCH_HOME=" + home, "LOADBENCH_BIN=" + ExePath()});
  *out = std::move(c);
  return Status::Ok();
}

Status RunAnalysis(AnalysisCommand c, int* exit_code) {
  std::vector<char*> argv = CStrings(c.argv), env = CStrings(c.env);
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd status_rd(status[0]), status_wr(status[1]);
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.keep_stdin = true;
  setup.errno_fd = status_wr.get();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) ExecChild(setup, c.python.c_str(), argv.data(), env.data());
  ::setpgid(pid, pid);  // also here, so that no signal finds the group not made yet
  status_wr.reset();
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_rd.get(), &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  if (n > 0) {
    Reap(pid);
    return Status::FromErrno(fmt::format("cannot execute {}", c.python), child_errno);
  }
  *exit_code = WaitForCommandGroup(pid);
  return Status::Ok();
}

}  // namespace loadbench
