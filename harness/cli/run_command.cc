// `loadbench run`: the strategies of --strategies on one file, cold and/or warm, in rounds. The
// flags become an experiment's tables (docs/experiments.md), read by the readers that read an
// experiment file (harness/experiment/tables.h), and the executor runs the experiment like a
// file's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "harness/cli/commands.h"
#include "harness/cli/reps_options.h"
#include "harness/experiment/tables.h"
#include "harness/machine/counters.h"
#include "harness/record/record.h"
#include "harness/run/dry_run.h"
#include "harness/run/executor.h"
#include "harness/storage/storage.h"
#include "loaders/base/units.h"
#include "loaders/use/use.h"

namespace loadbench::cli {
namespace {

// The fewest rounds whose paired ratios get a 95% interval: the signed-rank interval of 5
// pairs cannot reach 95% (docs/rounds.md), of 6 it is 96.9%.
constexpr int kRunDefaultReps = 6;

// The flags as tables, and what the readers need to name them: each value's flag, each
// point's text as written.
struct FlagTables {
  toml::table top;
  ExperimentSource source;
  std::vector<std::string> written;  // each point as given, before --consume and the like
  std::vector<std::string> texts;    // each point's text, with them
};

// --exec and --exec-shell, after the strategies, each a [[strategy]] table of its own. A bad
// label, or one used twice, is the reader's to refuse.
Status ExecTables(const RunFlags& f, toml::array* strategies, FlagTables* out) {
  for (bool shell : {false, true}) {
    for (const std::string& text : shell ? f.exec_shell : f.exec) {
      ExecCommand c;
      LB_RETURN_IF_ERROR(ParseExecFlag(text, shell, &c));
      toml::table t{{"name", kExec}, {"label", c.label}};
      if (shell) {
        t.insert("shell", true);
        t.insert("command", c.argv[0]);
      } else {
        toml::array argv;
        for (const std::string& word : c.argv) argv.push_back(word);
        t.insert("command", std::move(argv));
      }
      strategies->push_back(std::move(t));
      out->written.push_back(ExecSpec(c.label).text);
      out->texts.push_back(out->written.back());
    }
  }
  if (strategies->empty()) {
    return Status::BadInput("--strategies none: nothing to run without --exec or --exec-shell");
  }
  return Status::Ok();
}

// --strategies as specs. fleet:design=torch_bcast and torch_stripe are the engine's designs,
// which the experiment's reader makes commands (table_fleet_engine.cc): each is parsed here as a
// fleet point with its design aside, a design fleet's own options do not list.
Status ParseStrategies(const std::string& text, std::vector<StrategySpec>* out) {
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    std::vector<StrategySpec> specs;
    const size_t at = item.find(":design=torch_");
    if (!item.starts_with("fleet:") || at == std::string::npos) {
      LB_RETURN_IF_ERROR(ParseStrategyList(item, &specs));
    } else {
      const size_t end = std::min(item.find(':', at + 1), item.size());
      std::string rest = item;
      rest.erase(at, end - at);
      LB_RETURN_IF_ERROR(ParseStrategyList(rest, &specs));
      specs.at(0).options["design"] = item.substr(at + 8, end - at - 8);
      specs.at(0).text = item;
    }
    out->insert(out->end(), specs.begin(), specs.end());
  }
  return Status::Ok();
}

// The strategy points, with --consume and the like joined to every one that does not set them,
// each a [[strategy]] table that keeps its text as written.
Status StrategyTables(const RunFlags& f, FlagTables* out) {
  std::vector<StrategySpec> specs;
  if (f.strategies != "none") LB_RETURN_IF_ERROR(ParseStrategies(f.strategies, &specs));
  out->top.insert("strategy", toml::array{});
  toml::array* strategies = out->top.get_as<toml::array>("strategy");
  for (StrategySpec& spec : specs) {
    out->written.push_back(spec.text);
    const bool engine = IsFleetEngine(spec);  // a command: no use options, its row its label's
    for (const auto& [name, value] : f.use) {
      if (engine || value.empty() || spec.options.count(name)) continue;
      spec.options[name] = value;
      spec.text += fmt::format(":{}={}", name, value);
    }
    toml::table t{{"name", spec.name}};
    for (const auto& [k, v] : spec.options) t.insert(k, v);
    if (!spec.via.empty()) t.insert("via", spec.via);
    strategies->push_back(std::move(t));
    out->source.written[&strategies->back()] = spec.text;
    out->texts.push_back(engine ? ExecSpec(spec.options.at("design")).text : spec.text);
  }
  return ExecTables(f, strategies, out);
}

// --baseline names a strategy as written in --strategies, before --consume and the like join
// it; by default fread when listed as such, else the first.
Status Baseline(const RunFlags& f, const FlagTables& t, std::string* out) {
  const std::vector<std::string>& written = t.written;
  const std::vector<std::string>& specs = t.texts;
  if (f.baseline.empty()) {
    *out = specs.empty() ? "" : specs[0];
    for (size_t i = 0; i < specs.size(); ++i) {
      if (written[i] == "fread") *out = specs[i];
    }
    return Status::Ok();
  }
  const auto it = std::find(written.begin(), written.end(), f.baseline);
  if (it != written.end()) {
    *out = specs[static_cast<size_t>(it - written.begin())];
  } else if (std::find(specs.begin(), specs.end(), f.baseline) != specs.end()) {
    *out = f.baseline;
  } else {
    return Status::BadInput(fmt::format("--baseline '{}' is not one of --strategies ({})",
                                        f.baseline, fmt::join(written, ",")));
  }
  return Status::Ok();
}

// Names `n`, and every value in it, by `flag` in the readers' messages.
void NameByFlag(const toml::node* n, const std::string& flag, ExperimentSource* source) {
  if (n == nullptr) return;
  source->flags[n] = flag;
  if (const toml::table* t = n->as_table()) {
    for (const auto& [key, v] : *t) NameByFlag(&v, flag, source);
  } else if (const toml::array* a = n->as_array()) {
    for (const toml::node& v : *a) NameByFlag(&v, flag, source);
  }
}

// --storage KIND[:OPTION=VALUE...], each a [[storage]] table, its values named by the flag.
Status StorageTables(const RunFlags& f, FlagTables* out) {
  if (f.storages.empty()) return Status::Ok();
  toml::array tables;
  for (const std::string& given : f.storages) {
    // probe=off|on is the run's (its own probe taken or not), the rest the storage's.
    std::string text = given;
    std::optional<bool> probe;
    for (const char* option : {":probe=off", ":probe=on"}) {
      if (const size_t at = text.find(option); at != std::string::npos) {
        probe = std::string(option) == ":probe=on";
        text.erase(at, std::strlen(option));
      }
    }
    StorageSpec spec;
    if (Status s = ParseStorage(text, &spec); !s.ok()) {
      return Status::BadInput("--storage: " + s.message());
    }
    // The options as written (ParseStorage has checked them), for the table's reader.
    toml::table t{{"kind", spec.kind}};
    for (size_t at = text.find(':'); at != std::string::npos;) {
      const size_t end = text.find(':', at + 1);
      const std::string option = text.substr(at + 1, end == std::string::npos ? end : end - at - 1);
      const size_t eq = option.find('=');
      t.insert(option.substr(0, eq), eq == std::string::npos ? "" : option.substr(eq + 1));
      at = end;
    }
    if (probe) t.insert("probe", *probe);
    tables.push_back(std::move(t));
  }
  out->top.insert("storage", std::move(tables));
  NameByFlag(out->top.get("storage"), "--storage", &out->source);
  return Status::Ok();
}

// The top level's keys from the flags: one given file, one procs count, one memory limit, and
// `run`'s rounds (--reps is applied over them, as `experiment --reps` is over a file's).
Status TopKeys(const RunFlags& f, const std::string& baseline, FlagTables* out) {
  if (f.seed > static_cast<uint64_t>(INT64_MAX)) {
    return Status::BadInput(fmt::format("--seed: {} is out of range (0 to {})", f.seed, INT64_MAX));
  }
  uint64_t limit = 0;
  if (!f.memory_limit.empty()) {
    LB_RETURN_IF_ERROR(ParseBytes(f.memory_limit, "--memory-limit", &limit));
    if (limit == 0) return Status::BadInput("--memory-limit: must not be 0");
  }
  toml::table& top = out->top;
  // Each value named by its flag, for a message of the readers'.
  auto put = [&](const char* key, auto&& value, const char* flag) {
    top.insert(key, std::forward<decltype(value)>(value));
    NameByFlag(top.get(key), flag, &out->source);
  };
  put("name", f.experiment, "--experiment");
  top.insert("reps", kRunDefaultReps);
  put("cache", f.cache, "--cache");
  put("order", f.order, "--order");
  put("seed", static_cast<int64_t>(f.seed), "--seed");
  put("ceiling", f.ceiling, "--ceiling");
  put("baseline", baseline, "--baseline");
  put("profile", f.profile.on, "--profile");
  if (f.profile.hz) put("profile_hz", *f.profile.hz, "--profile-hz");
  put("timeout_s", f.timeout_s, "--timeout");
  if (f.tune == "auto") {
    put("system", toml::table{{"tune", "auto"}}, "--tune");
  } else {
    put("system", toml::table{{"tune", f.tune == "on"}}, "--tune");
  }
  if (f.procs > 1) put("procs", f.procs, "--procs");  // under MPI, 1 means the job's size
  put("pattern", f.pattern, "--pattern");
  if (limit > 0) put("memory_limit", static_cast<int64_t>(limit), "--memory-limit");
  put("file", toml::array{toml::table{{"path", f.file}}}, "--file");
  LB_RETURN_IF_ERROR(StorageTables(f, out));
  NameByFlag(top.get("strategy"), "--strategies", &out->source);
  // An exec command's table names itself ("exec:label=a b: ..."), as in a file.
  for (const toml::node& t : *top.get_as<toml::array>("strategy")) {
    if (t.as_table()->get_as<std::string>("name")->get() == kExec) out->source.flags.erase(&t);
  }
  return Status::Ok();
}

// The experiment the flags describe: their tables read by the readers of an experiment file,
// then --reps applied over them as `experiment --reps` is over a file's.
Status Build(const RunFlags& f, Experiment* e, ExecuteOptions* o) {
  FlagTables tables;
  LB_RETURN_IF_ERROR(StrategyTables(f, &tables));
  LB_RETURN_IF_ERROR(ParseCounterList(f.counters, &o->counters));
  RepsOverrides reps;
  LB_RETURN_IF_ERROR(ParseRepsFlags(f.reps, &reps));
  if (f.profile.hz && !f.profile.on) return Status::BadInput("--profile-hz: only with --profile");
  std::string baseline;
  LB_RETURN_IF_ERROR(Baseline(f, tables, &baseline));
  LB_RETURN_IF_ERROR(TopKeys(f, baseline, &tables));
  LB_RETURN_IF_ERROR(ReadExperiment(tables.top, tables.source, e));
  return ApplyRepsOverrides(reps, e);
}

}  // namespace

int RunCommand(const RunFlags& f, const std::string& command_line) {
  Experiment e;
  ExecuteOptions o;
  Status s = Build(f, &e, &o);
  if (s.ok()) s = CheckExports(f.report);
  if (!s.ok()) return ReportError("run", s);
  o.who = "loadbench run";
  o.out_dir = f.out.empty() ? "results/run-" + NowStamp("%Y%m%d-%H%M%S") : f.out;
  if (f.dry_run) return PrintPlan(e, "data", o.out_dir);
  o.sample_ms = f.sample_ms;
  o.resume = f.resume;
  o.wait = !f.no_wait;
  o.settle_wait_s = f.settle_wait_s;
  o.verbose = f.verbose;
  o.command_line = command_line;
  return ReportAfterRuns(o.who, Execute(e, o), o.out_dir, f.report);
}

}  // namespace loadbench::cli
