// `loadbench cache drop|warm|status FILE`: the runner's cache preparation on its own, for tools
// that time something else (fio) against a checked page-cache state.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/cli/command.h"
#include "harness/run/session.h"
#include "harness/system/cache.h"
#include "loaders/base/file_io.h"

namespace loadbench::cli {
namespace {

class Cache final : public Command {
 public:
  CLI::App* Add(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "cache", "Drop a file from the page cache, or warm it, and check the result; or report "
                 "how much of it is resident. Exit 0 when the state was reached, 1 when not");
    cmd->add_option("action", action_, "drop (cold: <= 1% resident), warm (>= 99%), status")
        ->required()
        ->check(CLI::IsMember({"drop", "warm", "status"}));
    cmd->add_option("file", file_, "The file")->required();
    cmd->add_flag("--json", json_, "Print JSON");
    return cmd;
  }

  int Run(const std::string&) override {
    const std::string cmd = "cache " + action_;
    UniqueFd fd;
    Status s = OpenReadOnly(file_, 0, &fd);
    if (!s.ok()) return ReportError(cmd, s);
    DropMethod drop = DropMethod::kDropCaches;
    if (action_ == "drop") s = DropFileCache(file_, &drop);
    if (action_ == "warm") s = WarmFile(file_);
    Residency r;
    if (s.ok()) s = MeasureResidency(file_, &r);
    if (!s.ok()) return ReportError(cmd, s);
    const double frac = r.fraction();
    const bool reached = action_ == "drop"   ? frac <= kColdMaxResident
                         : action_ == "warm" ? frac >= kWarmMinResident
                                             : true;
    Print(r, drop, reached);
    if (!reached) {
      fmt::print(stderr, "loadbench {}: {}: still {:.2f}% resident, the {} state was not reached\n",
                 cmd, file_, frac * 100, action_ == "drop" ? "cold" : "warm");
      return 1;
    }
    return 0;
  }

 private:
  void Print(const Residency& r, DropMethod drop, bool reached) const {
    const double frac = r.fraction();
    if (json_) {
      nlohmann::ordered_json j{{"file", file_},
                               {"action", action_},
                               {"resident", frac},
                               {"resident_pages", r.resident_pages},
                               {"total_pages", r.total_pages},
                               {"method", ResidencyMethod()},
                               {"state_reached", reached}};
      if (action_ == "drop") j["drop_method"] = DropMethodName(drop);
      fmt::print("{}\n", j.dump());
      return;
    }
    fmt::print("{}: {:.2f}% resident ({} of {} pages, {}){}\n", file_, frac * 100,
               r.resident_pages, r.total_pages, ResidencyMethod(),
               action_ == "drop" ? fmt::format(" after {}", DropMethodName(drop)) : "");
  }

  std::string action_, file_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> CacheCommand() { return std::make_unique<Cache>(); }

}  // namespace loadbench::cli
