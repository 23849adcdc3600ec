// The command line: one Command per subcommand, each in a file of its own. A command declares
// its flags on the application (Add) and, once they are parsed, does its work (Run); main only
// parses and dispatches.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "loaders/base/status.h"

namespace loadbench::cli {

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its flags to `app`; returns the subcommand.
  virtual CLI::App* Add(CLI::App& app) = 0;
  // Runs it with the parsed flags; `command_line` is the whole invocation, for env.json.
  // Returns the exit code of the CLI contract (docs/cli.md).
  virtual int Run(const std::string& command_line) = 0;
};

// Every subcommand, in the order --help lists them.
std::vector<std::unique_ptr<Command>> AllCommands();

std::unique_ptr<Command> GenCommand();
std::unique_ptr<Command> InspectCommand();
std::unique_ptr<Command> RunCommand();
std::unique_ptr<Command> ExperimentCommand();
std::unique_ptr<Command> ListCommand();
std::unique_ptr<Command> CacheCommand();
std::unique_ptr<Command> ProbeCommand();
std::unique_ptr<Command> WorkerCommand();

// "loadbench CMD: message" on stderr; returns the status's exit code.
int ReportError(const std::string& cmd, const Status& s);

}  // namespace loadbench::cli
