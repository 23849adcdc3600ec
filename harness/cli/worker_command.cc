// `loadbench worker` (internal, hidden from --help): one load in the worker process the runner
// forks and execs (harness/run/worker.h).
#include <fmt/format.h>

#include "harness/cli/command.h"
#include "harness/run/worker.h"
#include "harness/system/counters.h"

namespace loadbench::cli {
namespace {

class Worker final : public Command {
 public:
  CLI::App* Add(CLI::App& app) override {
    auto* cmd = app.add_subcommand("worker", "Internal: one load in a worker process");
    cmd->group("");  // hidden from --help
    cmd->add_option("--file", req_.file)->required();
    cmd->add_option("--strategy", req_.strategy)->required();
    cmd->add_option("--result-fd", result_fd_)->capture_default_str();
    cmd->add_option("--counters", counters_)->capture_default_str();
    cmd->add_option("--hold-fd", req_.hold_fd)->capture_default_str();
    cmd->add_option("--expect-checksum", expect_)->capture_default_str();
    return cmd;
  }

  int Run(const std::string&) override {
    Status s = ParseCounterList(counters_, &req_.counters);
    if (!s.ok()) return ReportError("worker", s);
    if (expect_ != "none") {
      size_t used = 0;
      try {
        req_.expect_checksum = std::stoull(expect_, &used, 16);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != expect_.size()) {
        return ReportError("worker", Status::BadInput(fmt::format(
                                         "--expect-checksum: '{}' is not a hex number", expect_)));
      }
    }
    return WorkerMain(req_, result_fd_);
  }

 private:
  WorkerRequest req_;
  int result_fd_ = 1;
  std::string counters_ = "none", expect_ = "none";
};

}  // namespace

std::unique_ptr<Command> WorkerCommand() { return std::make_unique<Worker>(); }

}  // namespace loadbench::cli
