// `loadbench run`: the strategies of --strategies on one file, cold and/or warm, in rounds. The
// flags become an experiment in memory, which the executor runs like an experiment file.
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/command.h"
#include "harness/cli/reps_options.h"
#include "harness/run/executor.h"
#include "harness/run/session.h"
#include "harness/system/counters.h"
#include "loaders/base/units.h"
#include "loaders/use/use.h"

namespace loadbench::cli {
namespace {

class RunCmd final : public Command {
 public:
  CLI::App* Add(CLI::App& app) override;
  int Run(const std::string& command_line) override;

 private:
  void AddMeasurementOptions(CLI::App* cmd);
  void AddUseOptions(CLI::App* cmd);
  Status Strategies(Experiment* e, std::vector<std::string>* written) const;
  Status Baseline(const std::vector<std::string>& written, Experiment* e) const;
  Status Build(Experiment* e, ExecuteOptions* o) const;

  std::string file_, strategies_ = "fread,mmap,mmap_seq", cache_ = "both";
  RepsFlags reps_;
  std::string order_ = "interleaved", baseline_, out_, experiment_ = "run";
  uint64_t seed_ = 0;
  bool ceiling_ = false;
  double timeout_s_ = 0, sample_ms_ = 10;
  std::string counters_ = "default", memory_limit_;
  int procs_ = 1;
  std::map<std::string, std::string> use_;  // --consume and the like
};

CLI::App* RunCmd::Add(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "run", "Load a file with each strategy in a fresh worker process, cold and/or warm, "
             "verify every load by checksum, and record the runs");
  cmd->add_option("--file", file_, "Weight file")->required();
  cmd->add_option("--strategies", strategies_,
                  "Comma-separated strategies, each with optional :key=value options, "
                  "e.g. fread:chunk=4MiB,mmap (see `loadbench list`)")
      ->capture_default_str();
  cmd->add_option("--cache", cache_, "Cache state: cold, warm or both")
      ->check(CLI::IsMember({"cold", "warm", "both"}))
      ->capture_default_str();
  AddRepsOptions(cmd, &reps_,
                 "Rounds: in each, every strategy runs once per cache state (default 5)");
  cmd->add_option("--order", order_,
                  "Order of the strategies within each round: interleaved (rotated by one "
                  "each round) or shuffled (seeded by --seed)")
      ->check(CLI::IsMember({"interleaved", "shuffled"}))
      ->capture_default_str();
  cmd->add_option("--seed", seed_, "Seed of the shuffled order")->capture_default_str();
  cmd->add_flag("--ceiling", ceiling_,
                "A ceiling run in every cold round: a raw O_DIRECT read of the file through "
                "io_uring at depth 32, the device's speed at that moment");
  cmd->add_option("--baseline", baseline_,
                  "The strategy (as written in --strategies) every paired ratio is against "
                  "(default: fread when listed, else the first)");
  cmd->add_option("--out", out_,
                  "Results folder (default: results/run-<UTC time>); must not hold runs yet");
  cmd->add_option("--experiment", experiment_, "Name recorded in every run")
      ->capture_default_str();
  cmd->add_option("--timeout", timeout_s_, "Seconds before a run is killed (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  AddMeasurementOptions(cmd);
  AddUseOptions(cmd);
  cmd->add_option("--memory-limit", memory_limit_,
                  "Run every worker in a memory cgroup with this limit (e.g. 4GiB), so that "
                  "its page cache and anonymous memory are charged as in a container "
                  "(cgroup v2, else v1; root only)");
  return cmd;
}

void RunCmd::AddMeasurementOptions(CLI::App* cmd) {
  cmd->add_option("--counters", counters_,
                  "perf events counted over each load, by libpfm4 name (e.g. "
                  "perf::PAGE-FAULTS,CYCLES); 'default' is the software faults, switches, "
                  "migrations and task clock plus CYCLES, INSTRUCTIONS, CACHE-MISSES and "
                  "DTLB-LOAD-MISSES; 'none' counts nothing. Events this machine cannot "
                  "count are null, with the reason in env.json")
      ->capture_default_str();
  cmd->add_option("--sample-ms", sample_ms_,
                  "Timeline sampling interval in ms (RSS, page cache, bytes read, faults; "
                  "timelines/RUN_ID.csv), at least 1; 0 turns timelines off")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            // Finer than 1 ms the sampler would busy-poll and take the CPU the load needs.
            const double ms = std::strtod(v.c_str(), nullptr);
            return ms == 0 || (ms >= 1 && ms <= 60000) ? "" : "must be 0 or 1..60000";
          },
          "0 or 1..60000"))
      ->capture_default_str();
  cmd->add_option("--procs", procs_,
                  "Workers loading the file at the same time in every run (each is a run "
                  "record; memory is measured while all hold their load)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

// Use options for every strategy that does not set its own (mmap:bind=copy keeps copy).
void RunCmd::AddUseOptions(CLI::App* cmd) {
  for (const char* name : {"consume", "bind", "transform", "place"}) {
    const OptionSpec* o = nullptr;
    for (const OptionSpec& u : UseOptionSpecs()) o = u.name == name ? &u : o;
    cmd->add_option(fmt::format("--{}", name), use_[name],
                    fmt::format("{} (default {}): {}; for every strategy that does not set "
                                "{}= itself",
                                fmt::join(o->choices, "|"), o->default_value, o->help, name))
        ->check(CLI::IsMember(o->choices));
  }
}

// The strategy points, with --consume and the like joined to every one that does not set them.
Status RunCmd::Strategies(Experiment* e, std::vector<std::string>* written) const {
  std::vector<StrategySpec> specs;
  LB_RETURN_IF_ERROR(ParseStrategyList(strategies_, &specs));
  for (StrategySpec& spec : specs) {
    written->push_back(spec.text);
    ExperimentStrategy point;
    for (const auto& [name, value] : use_) {
      if (value.empty() || spec.options.count(name)) continue;
      spec.options[name] = value;
      spec.text += fmt::format(":{}={}", name, value);
    }
    point.spec = std::move(spec);
    e->strategies.push_back(std::move(point));
  }
  return Status::Ok();
}

// --baseline names a strategy as written in --strategies, before --consume and the like join
// it; by default fread when listed as such, else the first.
Status RunCmd::Baseline(const std::vector<std::string>& written, Experiment* e) const {
  std::vector<std::string> specs;
  for (const auto& s : e->strategies) specs.push_back(s.spec.text);
  if (baseline_.empty()) {
    e->baseline = specs.empty() ? "" : specs[0];
    for (size_t i = 0; i < specs.size(); ++i) {
      if (written[i] == "fread") e->baseline = specs[i];
    }
    return Status::Ok();
  }
  const auto it = std::find(written.begin(), written.end(), baseline_);
  if (it != written.end()) {
    e->baseline = specs[static_cast<size_t>(it - written.begin())];
  } else if (std::find(specs.begin(), specs.end(), baseline_) != specs.end()) {
    e->baseline = baseline_;
  } else {
    return Status::BadInput(fmt::format("--baseline '{}' is not one of --strategies ({})",
                                        baseline_, fmt::join(written, ",")));
  }
  return Status::Ok();
}

// The experiment the flags describe: one given file, one procs count, one memory limit.
Status RunCmd::Build(Experiment* e, ExecuteOptions* o) const {
  std::vector<std::string> written;  // as given, before --consume and the like joined them
  LB_RETURN_IF_ERROR(Strategies(e, &written));
  LB_RETURN_IF_ERROR(ParseCounterList(counters_, &o->counters));
  RepsOverrides reps;
  LB_RETURN_IF_ERROR(ParseRepsFlags(reps_, &reps));
  e->name = experiment_;
  e->reps = 5;
  e->caches = cache_ == "both" ? std::vector<std::string>{"cold", "warm"}
                               : std::vector<std::string>{cache_};
  LB_RETURN_IF_ERROR(ParseRoundOrder(order_, &e->order));
  e->seed = seed_;
  e->ceiling = ceiling_;
  e->timeout_s = timeout_s_;
  e->procs = {procs_};
  ExperimentFile f;
  f.path = file_;
  e->files = {f};
  LB_RETURN_IF_ERROR(ApplyRepsOverrides(reps, e));
  LB_RETURN_IF_ERROR(Baseline(written, e));
  uint64_t limit = 0;
  if (!memory_limit_.empty()) {
    LB_RETURN_IF_ERROR(ParseBytes(memory_limit_, "--memory-limit", &limit));
    if (limit == 0) return Status::BadInput("--memory-limit: must not be 0");
  }
  e->memory_limits = {limit};
  PlanRuns(e);
  return Status::Ok();
}

int RunCmd::Run(const std::string& command_line) {
  Experiment e;
  ExecuteOptions o;
  if (Status s = Build(&e, &o); !s.ok()) return ReportError("run", s);
  o.who = "loadbench run";
  o.out_dir = out_.empty() ? "results/run-" + NowStamp("%Y%m%d-%H%M%S") : out_;
  o.sample_ms = sample_ms_;
  o.command_line = command_line;
  return Execute(e, o);
}

}  // namespace

std::unique_ptr<Command> RunCommand() { return std::make_unique<RunCmd>(); }

}  // namespace loadbench::cli
