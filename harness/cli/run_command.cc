// `loadbench run`: the strategies of --strategies on one file, cold and/or warm, in rounds. The
// flags become an experiment in memory, which the executor runs like an experiment file.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/commands.h"
#include "harness/cli/reps_options.h"
#include "harness/machine/counters.h"
#include "harness/record/record.h"
#include "harness/run/executor.h"
#include "loaders/base/units.h"
#include "loaders/use/part.h"
#include "loaders/use/use.h"

namespace loadbench::cli {
namespace {

// --exec and --exec-shell, after the strategies, each a point of its own.
Status ExecStrategies(const RunFlags& f, Experiment* e, std::vector<std::string>* written) {
  for (bool shell : {false, true}) {
    for (const std::string& text : shell ? f.exec_shell : f.exec) {
      ExperimentStrategy point;
      ExecCommand c;
      LB_RETURN_IF_ERROR(ParseExecFlag(text, shell, &c));
      point.spec = ExecSpec(c.label);
      LB_RETURN_IF_ERROR(LabelOf(point.spec, &c.label));
      for (const ExperimentStrategy& other : e->strategies) {
        if (other.spec.text == point.spec.text) {
          return Status::BadInput(fmt::format("--exec: label '{}' is used twice", c.label));
        }
      }
      point.exec = std::move(c);
      written->push_back(point.spec.text);
      e->strategies.push_back(std::move(point));
    }
  }
  if (e->strategies.empty()) {
    return Status::BadInput("--strategies none: nothing to run without --exec or --exec-shell");
  }
  return Status::Ok();
}

// The strategy points, with --consume and the like joined to every one that does not set them;
// `written` gets each as given.
Status Strategies(const RunFlags& f, Experiment* e, std::vector<std::string>* written) {
  std::vector<StrategySpec> specs;
  if (f.strategies != "none") LB_RETURN_IF_ERROR(ParseStrategyList(f.strategies, &specs));
  for (StrategySpec& spec : specs) {
    written->push_back(spec.text);
    for (const auto& [name, value] : f.use) {
      if (value.empty() || spec.options.count(name)) continue;
      spec.options[name] = value;
      spec.text += fmt::format(":{}={}", name, value);
    }
    ExperimentStrategy point;
    point.spec = std::move(spec);
    e->strategies.push_back(std::move(point));
  }
  return ExecStrategies(f, e, written);
}

// --baseline names a strategy as written in --strategies, before --consume and the like join
// it; by default fread when listed as such, else the first.
Status Baseline(const RunFlags& f, const std::vector<std::string>& written, Experiment* e) {
  std::vector<std::string> specs;
  for (const auto& s : e->strategies) specs.push_back(s.spec.text);
  if (f.baseline.empty()) {
    e->baseline = specs.empty() ? "" : specs[0];
    for (size_t i = 0; i < specs.size(); ++i) {
      if (written[i] == "fread") e->baseline = specs[i];
    }
    return Status::Ok();
  }
  const auto it = std::find(written.begin(), written.end(), f.baseline);
  if (it != written.end()) {
    e->baseline = specs[static_cast<size_t>(it - written.begin())];
  } else if (std::find(specs.begin(), specs.end(), f.baseline) != specs.end()) {
    e->baseline = f.baseline;
  } else {
    return Status::BadInput(fmt::format("--baseline '{}' is not one of --strategies ({})",
                                        f.baseline, fmt::join(written, ",")));
  }
  return Status::Ok();
}

// The experiment the flags describe: one given file, one procs count, one memory limit.
Status Build(const RunFlags& f, Experiment* e, ExecuteOptions* o) {
  std::vector<std::string> written;  // as given, before --consume and the like joined them
  LB_RETURN_IF_ERROR(Strategies(f, e, &written));
  LB_RETURN_IF_ERROR(ParseCounterList(f.counters, &o->counters));
  RepsOverrides reps;
  LB_RETURN_IF_ERROR(ParseRepsFlags(f.reps, &reps));
  e->name = f.experiment;
  e->reps = 5;
  e->caches = f.cache == "both" ? std::vector<std::string>{"cold", "warm"}
                                : std::vector<std::string>{f.cache};
  LB_RETURN_IF_ERROR(ParseRoundOrder(f.order, &e->order));
  e->seed = f.seed;
  e->ceiling = f.ceiling;
  if (Status s = CheckGroupedOrder(*e); !s.ok()) return Status::BadInput("--order: " + s.message());
  if (f.profile.hz && !f.profile.on) return Status::BadInput("--profile-hz: only with --profile");
  e->profile = f.profile.on;
  if (f.profile.hz) e->profile_hz = *f.profile.hz;
  e->timeout_s = f.timeout_s;
  e->system.tune = f.tune != "off";
  e->system.tune_auto = f.tune == "auto";
  e->procs = {f.procs};
  e->procs_given = f.procs > 1;  // under MPI, 1 means the job's size
  ReadPattern pattern;
  LB_RETURN_IF_ERROR(ParsePattern(f.pattern, &pattern));
  e->patterns = {pattern.Text()};
  ExperimentFile file;
  file.path = f.file;
  e->files = {file};
  LB_RETURN_IF_ERROR(ApplyRepsOverrides(reps, e));
  LB_RETURN_IF_ERROR(Baseline(f, written, e));
  uint64_t limit = 0;
  if (!f.memory_limit.empty()) {
    LB_RETURN_IF_ERROR(ParseBytes(f.memory_limit, "--memory-limit", &limit));
    if (limit == 0) return Status::BadInput("--memory-limit: must not be 0");
  }
  e->memory_limits = {limit};
  PlanRuns(e);
  return Status::Ok();
}

}  // namespace

int RunCommand(const RunFlags& f, const std::string& command_line) {
  Experiment e;
  ExecuteOptions o;
  if (Status s = Build(f, &e, &o); !s.ok()) return ReportError("run", s);
  o.who = "loadbench run";
  o.out_dir = f.out.empty() ? "results/run-" + NowStamp("%Y%m%d-%H%M%S") : f.out;
  o.sample_ms = f.sample_ms;
  o.resume = f.resume;
  o.wait = !f.no_wait;
  o.settle_wait_s = f.settle_wait_s;
  o.verbose = f.verbose;
  o.command_line = command_line;
  return Execute(e, o);
}

}  // namespace loadbench::cli
