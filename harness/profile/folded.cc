// Folding perf script's samples into one line per distinct stack (harness/profile/profile.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/process/program.h"
#include "harness/profile/profile.h"

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

// A header line of perf script: "COMM PID/TID TIME: REST", REST a sample's period or a task
// event. The thread's name may hold spaces, so the line is read from the "PID/TID TIME:" pair.
struct Header {
  std::string_view comm, rest;
  int64_t pid = 0, tid = 0;
  double time = 0;
};

bool ParseHeader(std::string_view line, Header* h) {
  size_t prev_begin = std::string_view::npos, pos = 0;
  while (pos < line.size()) {
    const size_t begin = line.find_first_not_of(" \t", pos);
    if (begin == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t", begin);
    if (end == std::string_view::npos) end = line.size();
    const std::string token(line.substr(begin, end - begin));
    long long pid = 0, tid = 0;
    double time = 0;
    char tail = 0;
    if (prev_begin != std::string_view::npos && token.back() == ':' &&
        std::sscanf(token.c_str(), "%lf%c", &time, &tail) == 2 && tail == ':' &&
        std::sscanf(std::string(line.substr(prev_begin, begin - prev_begin)).c_str(), "%lld/%lld",
                    &pid, &tid) == 2) {
      *h = {Trim(line.substr(0, prev_begin)), Trim(line.substr(end)), pid, tid, time};
      return true;
    }
    prev_begin = begin;
    pos = end;
  }
  return false;
}

bool Inside(const Window& w, double t) {
  const auto after =
      std::upper_bound(w.begin(), w.end(), t,
                       [](double v, const std::pair<double, double>& s) { return v < s.first; });
  return after != w.begin() && t <= std::prev(after)->second;
}

// A task event: a thread's start (PERF_RECORD_FORK(PID:TID), TID the new thread) or exit
// (PERF_RECORD_EXIT(PID:TID)); any other (COMM) says nothing here.
void AddTaskEvent(const Header& h, FoldedProfile* out) {
  long long pid = 0, tid = 0;
  const std::string rest(h.rest);
  if (std::sscanf(rest.c_str(), "PERF_RECORD_FORK(%lld:%lld)", &pid, &tid) == 2) {
    ThreadSeen& t = out->threads[tid];
    t.started = h.time;
    if (t.name.empty()) t.name = std::string(h.comm);  // a new thread has its creator's name
  } else if (std::sscanf(rest.c_str(), "PERF_RECORD_EXIT(%lld:%lld)", &pid, &tid) == 2) {
    ThreadSeen& t = out->threads[tid];
    t.exited = h.time;
    t.name = std::string(h.comm);
  }
}

// Folds one sample: its header and its frames, leaf first; outside the window, counts it only.
Status AddSample(std::string_view line, const Header& h, const std::vector<std::string>& frames,
                 const std::optional<Window>& window, FoldedProfile* out) {
  uint64_t period = 0;
  if (std::sscanf(std::string(h.rest).c_str(), "%lu", &period) != 1) {
    return Status::BadInput(
        fmt::format("perf script: a sample header without a period: '{}'", Trim(line)));
  }
  if (window && !Inside(*window, h.time)) {
    ++out->outside;
    return Status::Ok();
  }
  std::string stack(h.comm);
  for (char& c : stack) c = c == ';' || c == ' ' ? '_' : c;
  for (auto f = frames.rbegin(); f != frames.rend(); ++f) stack += ";" + *f;
  ++out->stacks[stack];
  ++out->samples;
  out->period_ns += period;
  ThreadSeen& t = out->threads[h.tid];
  t.name = std::string(h.comm);
  ++t.samples;
  t.period_ns += period;
  return Status::Ok();
}

}  // namespace

Status FoldPerfScript(std::istream& in, const std::optional<Window>& window, FoldedProfile* out) {
  std::string line, header_line;
  Header header;
  std::vector<std::string> frames;
  bool in_sample = false;
  auto finish = [&]() -> Status {
    if (!in_sample) return Status::Ok();
    in_sample = false;
    return AddSample(header_line, header, frames, window, out);
  };
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (Trim(line).empty()) {
      LB_RETURN_IF_ERROR(finish());
      continue;
    }
    if (line[0] != ' ' && line[0] != '\t') {
      LB_RETURN_IF_ERROR(finish());
      header_line = line;  // the header's views point into it while the frames are read
      if (!ParseHeader(header_line, &header)) {
        return Status::BadInput(
            fmt::format("perf script: line {} is not a sample or task event: '{}'", n, line));
      }
      if (header.pid > 0 && out->pid == 0) out->pid = header.pid;
      if (header.rest.starts_with("PERF_RECORD_")) {
        AddTaskEvent(header, out);
        continue;
      }
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
  return finish();
}

Status FoldPerfData(const std::string& perf, const std::string& data_path,
                    const std::optional<Window>& window, FoldedProfile* out) {
  std::string text;
  const Status s = RunToEnd({.argv = {perf, "script", "-i", data_path, "--show-task-events", "-F",
                                      "comm,pid,tid,time,period,ip,sym,dso"},
                             .stderr_too = false,
                             .stop_on_interrupt = true},
                            &text);
  if (!s.ok() && s.code() == Status::Code::kFailed) return s;  // interrupted
  if (!s.ok()) return Status::Failed(fmt::format("perf script {}: {}", data_path, s.message()));
  std::istringstream in(std::move(text));
  return FoldPerfScript(in, window, out);
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
