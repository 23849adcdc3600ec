// The text side of the exec strategy: placeholders, `run --exec`'s splitting, finding the
// program.
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "harness/experiment/command.h"
#include "harness/process/child.h"
#include "harness/process/home.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size())) {
    s->replace(at, from.size(), to);
  }
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
    ReplaceAll(&arg, "{endpoint}", places.endpoint);
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
        if (ch == quote)
          quote = 0;
        else
          word += ch;
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

std::string PeersDir() {
  std::string home;
  if (!LoadbenchHome(&home).ok()) return "loaders/peers";  // no home: as from the source tree
  return home + "/loaders/peers";
}

Status ResolveProgram(const ExecCommand& c, const std::string& argv0, std::string* path) {
  return FindProgram(argv0, c.package, path);
}

}  // namespace loadbench
