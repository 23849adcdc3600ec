// The text side of the exec strategy: placeholders, `run --exec`'s splitting, finding the
// program, and the LOADBENCH_FD lines.
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "harness/run/exec.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size())) {
    s->replace(at, from.size(), to);
  }
}

// A protocol number: finite and not negative.
bool ParseSeconds(const std::string& text, double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !(v >= 0) || v > 1e9) return false;
  *out = v;
  return true;
}

bool ParseHex64(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 16) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 16);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

StrategySpec ExecSpec(const std::string& label) {
  StrategySpec spec;
  spec.name = kExec;
  spec.options[kLabelOption] = label;
  spec.text = fmt::format("{}:{}={}", kExec, kLabelOption, label);
  return spec;
}

std::vector<std::string> FillCommand(const ExecCommand& c, const ExecPlaces& places) {
  std::vector<std::string> argv;
  for (std::string arg : c.argv) {
    ReplaceAll(&arg, "{file}", places.file);
    ReplaceAll(&arg, "{dir}", places.dir);
    ReplaceAll(&arg, "{bytes}", std::to_string(places.bytes));
    ReplaceAll(&arg, "{peers}", places.peers);
    argv.push_back(std::move(arg));
  }
  if (c.shell) argv.insert(argv.begin(), {"/bin/sh", "-c"});
  return argv;
}

Status ParseExecFlag(const std::string& text, bool shell, ExecCommand* out) {
  const char* flag = shell ? "--exec-shell" : "--exec";
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::BadInput(fmt::format("{} '{}': expected LABEL=COMMAND", flag, text));
  }
  ExecCommand c;
  c.label = text.substr(0, eq);
  c.shell = shell;
  const std::string command = text.substr(eq + 1);
  if (shell) {
    c.argv = {command};
  } else {
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (char ch : command) {
      if (quote != 0) {
        if (ch == quote) quote = 0;
        else word += ch;
      } else if (ch == '\'' || ch == '"') {
        quote = ch;
        in_word = true;
      } else if (ch == ' ' || ch == '\t') {
        if (in_word) c.argv.push_back(word);
        word.clear();
        in_word = false;
      } else {
        word += ch;
        in_word = true;
      }
    }
    if (quote != 0) {
      return Status::BadInput(fmt::format("{} '{}': an unclosed {} quote", flag, text, quote));
    }
    if (in_word) c.argv.push_back(word);
  }
  if (c.argv.empty() || c.argv[0].empty()) {
    return Status::BadInput(fmt::format("{} '{}': no command after '='", flag, text));
  }
  *out = std::move(c);
  return Status::Ok();
}

std::string PeersDir() { return LOADBENCH_PEERS_DIR; }

Status ResolveProgram(const ExecCommand& c, const std::string& argv0, std::string* path) {
  const std::string install =
      c.package.empty() ? "" : fmt::format("; install Debian's {}", c.package);
  if (argv0.find('/') != std::string::npos) {
    if (::access(argv0.c_str(), F_OK) != 0) {
      return Status::Unsupported(fmt::format("command not found: {}{}", argv0, install));
    }
    *path = argv0;
    return Status::Ok();
  }
  const char* env = std::getenv("PATH");
  std::istringstream dirs(env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + argv0;
    if (::access(candidate.c_str(), X_OK) == 0) {
      *path = candidate;
      return Status::Ok();
    }
  }
  return Status::Unsupported(
      fmt::format("command not found: {} (not on PATH){}", argv0, install));
}

Status ParseExecReport(const std::string& text, ExecReport* out) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    double secs = 0;
    uint64_t sum = 0;
    if (key == "ready" && ParseSeconds(value, &secs)) {
      out->ready_s = secs;
    } else if (key == "done" && ParseSeconds(value, &secs)) {
      out->done_s = secs;
    } else if (key == "checksum" && ParseHex64(value, &sum)) {
      out->checksum = sum;
    } else if (key == "unsupported" && !value.empty()) {
      out->unsupported = value;
    } else {
      return Status::Failed(fmt::format(
          "LOADBENCH_FD line '{}': expected 'ready SECONDS', 'done SECONDS', 'checksum HEX' or "
          "'unsupported REASON'",
          line.substr(0, 200)));
    }
  }
  return Status::Ok();
}

}  // namespace loadbench
