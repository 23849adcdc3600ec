// loadbench: how do multi-GB model weights get from disk into memory fastest, and at what cost?
// main parses the command line and hands it to one subcommand (harness/cli/*_command.cc).
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "harness/cli/command.h"
#include "loadbench_commit.h"

namespace loadbench::cli {

std::vector<std::unique_ptr<Command>> AllCommands() {
  std::vector<std::unique_ptr<Command>> all;
  all.push_back(GenCommand());
  all.push_back(InspectCommand());
  all.push_back(RunCommand());
  all.push_back(ExperimentCommand());
  all.push_back(ListCommand());
  all.push_back(CacheCommand());
  all.push_back(ProbeCommand());
  all.push_back(WorkerCommand());
  return all;
}

int ReportError(const std::string& cmd, const Status& s) {
  fmt::print(stderr, "loadbench {}: {}\n", cmd, s.message());
  return s.exit_code();
}

}  // namespace loadbench::cli

int main(int argc, char** argv) {
  using namespace loadbench::cli;
  CLI::App app{
      "loadbench: measures how model weight files get from disk into memory, and what each way "
      "costs in time, memory, page faults and CPU."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(LOADBENCH_VERSION " (" LOADBENCH_COMMIT ")"));
  const auto commands = AllCommands();
  std::vector<CLI::App*> subcommands;
  for (const auto& c : commands) subcommands.push_back(c->Add(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; a usage error is one line and exit code 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "loadbench: {} (see --help)\n", e.what());
    return 2;
  }
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  for (size_t i = 0; i < commands.size(); ++i) {
    if (*subcommands[i]) return commands[i]->Run(command_line);
  }
  return 2;
}
