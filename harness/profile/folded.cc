// Folding perf script's samples into one line per distinct stack (harness/profile/profile.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/profile/profile.h"
#include "harness/system/child.h"
#include "harness/system/interrupt.h"

namespace loadbench {
namespace {

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// One frame line, "ADDR SYMBOL (DSO)", as a folded frame: the symbol, or "[dso file name]"
// where perf knows none; kernel frames end in "_[k]". Semicolons (none in real names) would
// split a frame, so they become colons.
bool FoldFrame(std::string_view line, std::string* out) {
  const size_t space = line.find(' ');
  const size_t open = line.rfind(" (");
  if (space == std::string_view::npos || open == std::string_view::npos || open < space ||
      line.back() != ')') {
    return false;
  }
  const std::string_view sym = Trim(line.substr(space + 1, open - space - 1));
  const std::string_view dso = line.substr(open + 2, line.size() - open - 3);
  const bool kernel = dso.starts_with("[kernel") || dso.ends_with(".ko");
  std::string name;
  if (sym.empty() || sym == "[unknown]") {
    const size_t slash = dso.rfind('/');
    const std::string_view base = slash == std::string_view::npos ? dso : dso.substr(slash + 1);
    name = base.starts_with("[") ? std::string(base) : fmt::format("[{}]", base);
  } else {
    name = std::string(sym);
  }
  for (char& c : name) c = c == ';' ? ':' : c;
  *out = kernel ? name + "_[k]" : name;
  return true;
}

// Folds one sample: its header "COMM PERIOD" and its frames, leaf first.
Status AddSample(std::string_view header, const std::vector<std::string>& frames,
                 FoldedProfile* out) {
  header = Trim(header);
  const size_t last = header.rfind(' ');
  uint64_t period = 0;
  if (last == std::string_view::npos ||
      std::sscanf(std::string(header.substr(last + 1)).c_str(), "%lu", &period) != 1) {
    return Status::BadInput(
        fmt::format("perf script: a sample header without a period: '{}'", header));
  }
  std::string stack(Trim(header.substr(0, last)));
  for (char& c : stack) c = c == ';' || c == ' ' ? '_' : c;
  for (auto f = frames.rbegin(); f != frames.rend(); ++f) stack += ";" + *f;
  ++out->stacks[stack];
  ++out->samples;
  out->period_ns += period;
  return Status::Ok();
}

}  // namespace

Status FoldPerfScript(std::istream& in, FoldedProfile* out) {
  std::string line, header;
  std::vector<std::string> frames;
  bool in_sample = false;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (Trim(line).empty()) {
      if (in_sample) LB_RETURN_IF_ERROR(AddSample(header, frames, out));
      in_sample = false;
      continue;
    }
    if (line[0] != ' ' && line[0] != '\t') {
      if (in_sample) LB_RETURN_IF_ERROR(AddSample(header, frames, out));
      header = line;
      frames.clear();
      in_sample = true;
      continue;
    }
    std::string frame;
    if (!in_sample || !FoldFrame(Trim(line), &frame)) {
      return Status::BadInput(fmt::format("perf script: line {} is not a frame: '{}'", n, line));
    }
    frames.push_back(std::move(frame));
  }
  if (in_sample) LB_RETURN_IF_ERROR(AddSample(header, frames, out));
  return Status::Ok();
}

Status FoldPerfData(const std::string& perf, const std::string& data_path, FoldedProfile* out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  const char* argv[] = {"perf", "script", "-i", data_path.c_str(), "-F", "comm,period,ip,sym,dso",
                        nullptr};
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.own_group = true;
  setup.out = fds[1];
  setup.err = -1;
  const pid_t pid = ::fork();
  if (pid == 0) ExecChild(setup, perf.c_str(), const_cast<char* const*>(argv));
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return Status::FromErrno("fork for perf script", errno);
  }
  std::string text;
  char buf[1 << 16];
  ssize_t n;
  while (!Interrupted()) {
    n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  ::kill(-pid, SIGKILL);  // done or interrupted: nothing of it outlives this
  const int wstatus = Reap(pid);
  if (Interrupted()) return Status::Failed("interrupted");
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::Failed(fmt::format("perf script {} failed (status {})", data_path, wstatus));
  }
  std::istringstream in(std::move(text));
  return FoldPerfScript(in, out);
}

Status WriteFolded(const std::string& path, const FoldedProfile& p) {
  std::string text;
  for (const auto& [stack, count] : p.stacks) text += fmt::format("{} {}\n", stack, count);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::NotWritten(Status::FromErrno(path, errno).message());
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (ok && closed) return Status::Ok();
  ::unlink(path.c_str());  // no half a profile
  return Status::NotWritten(Status::FromErrno(path, ok ? errno : err).message());
}

}  // namespace loadbench
