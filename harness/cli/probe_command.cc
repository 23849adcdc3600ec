// `loadbench probe`: this machine's ceilings, printed and stored in env.json.
#include "harness/cli/command.h"
#include "harness/probe/probe.h"

namespace loadbench::cli {
namespace {

class Probe final : public Command {
 public:
  CLI::App* Add(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "probe", "Measure this machine's ceilings (device, page cache, memcpy, page faults) with "
                 "a scratch file, print them with the settings that shape results, and store "
                 "them in env.json");
    cmd->add_option("--dir", probe_.dir, "Where the scratch file goes (created if missing)")
        ->capture_default_str();
    cmd->add_option("--size", probe_.size, "Scratch file size, e.g. 1GiB, 64MiB")
        ->capture_default_str();
    cmd->add_option("--out", probe_.out_dir,
                    "Results folder (default: results/probe-<UTC time>)");
    cmd->add_flag("--json", probe_.json, "Print the probe as JSON instead of the table");
    return cmd;
  }

  int Run(const std::string& command_line) override {
    probe_.command_line = command_line;
    return ProbeMain(probe_);
  }

 private:
  ProbeOptions probe_;
};

}  // namespace

std::unique_ptr<Command> ProbeCommand() { return std::make_unique<Probe>(); }

}  // namespace loadbench::cli
