// loadbench: how do multi-GB model weights get from disk into memory fastest, and at what cost?
// The command line: gen, inspect, run, experiment, list, cache, probe, and the internal worker.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loadbench_commit.h"
#include "harness/system/cache.h"
#include "harness/system/counters.h"
#include "harness/run/experiment_run.h"
#include "harness/gen/generator.h"
#include "harness/gen/presets.h"
#include "harness/system/interrupt.h"
#include "harness/probe/probe.h"
#include "harness/run/rounds.h"
#include "harness/run/runner.h"
#include "harness/run/worker.h"
#include "loaders/base/file_io.h"
#include "loaders/format/format.h"
#include "loaders/loader.h"
#include "loaders/base/units.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

int Fail(const char* cmd, const Status& s) {
  fmt::print(stderr, "loadbench {}: {}\n", cmd, s.message());
  return s.exit_code();
}

std::string JoinArgs(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) out += (i ? " " : "") + std::string(argv[i]);
  return out;
}

int Inspect(const std::string& path, bool json) {
  TensorTable t;
  Status s = ReadTensorTableFromPath(path, &t);
  if (!s.ok()) return Fail("inspect", s);
  if (json) {
    nlohmann::ordered_json j;
    j["file"] = path;
    j["format"] = t.format;
    j["file_bytes"] = t.file_size;
    j["data_offset"] = t.data_offset;
    j["tensor_bytes"] = t.tensor_bytes;
    j["header"] = t.header;
    j["tensors"] = nlohmann::ordered_json::array();
    for (const auto& x : t.tensors) {
      j["tensors"].push_back(nlohmann::ordered_json{{"name", x.name},
                                                    {"dtype", x.dtype},
                                                    {"shape", x.shape},
                                                    {"offset", x.offset},
                                                    {"size", x.size}});
    }
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    return 0;
  }
  fmt::print("file: {}\nformat: {}\nsize: {} ({} bytes)\n", path, t.format,
             FormatBytes(t.file_size), t.file_size);
  for (const auto& [k, v] : t.header.items()) {
    fmt::print("  {}: {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  fmt::print("tensors: {}, {} in all\n", t.tensors.size(), FormatBytes(t.tensor_bytes));
  size_t width = 4;
  for (const auto& x : t.tensors) width = std::max(width, x.name.size());
  fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}\n", "#", "name", width, "dtype", "shape",
             "offset", "bytes");
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const auto& x = t.tensors[i];
    std::string shape = "[";
    for (size_t d = 0; d < x.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(x.shape[d]);
    shape += "]";
    fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}\n", i, x.name, width, x.dtype, shape,
               x.offset, x.size);
  }
  return 0;
}

std::string KindText(const OptionSpec& o) {
  switch (o.kind) {
    case OptionSpec::Kind::kBytes:
      return "size";
    case OptionSpec::Kind::kInt:
      return o.max == INT64_MAX ? fmt::format("integer >= {}", o.min)
                                : fmt::format("integer {}..{}", o.min, o.max);
    case OptionSpec::Kind::kChoice:
      return fmt::format("{}", fmt::join(o.choices, "|"));
  }
  return "";
}

int List(bool json) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const StrategyInfo* s : Strategies()) {
    const std::string why = s->unsupported_reason();
    if (json) {
      nlohmann::ordered_json j{{"name", s->name},
                               {"summary", s->summary},
                               {"flags", s->flags == 0 ? "" : FlagNames(s->flags)},
                               {"supported", why.empty()},
                               {"unsupported_reason", why.empty() ? nlohmann::ordered_json()
                                                                  : nlohmann::ordered_json(why)},
                               {"options", nlohmann::ordered_json::array()}};
      for (const auto& o : s->options) {
        j["options"].push_back({{"name", o.name},
                                {"kind", KindText(o)},
                                {"default", o.default_value},
                                {"help", o.help}});
      }
      all.push_back(j);
      continue;
    }
    fmt::print("{}\n  {}\n", s->name, s->summary);
    fmt::print("  supported here: {}\n", why.empty() ? "yes" : "no: " + why);
    if (s->flags != 0) fmt::print("  flags: {}\n", FlagNames(s->flags));
    for (const auto& o : s->options) {
      fmt::print("  {}={}  ({}) {}\n", o.name, o.default_value, KindText(o), o.help);
    }
  }
  if (json) {
    fmt::print("{}\n", all.dump(2));
    return 0;
  }
  if (const std::string why = CudaNotBuiltReason(); !why.empty()) {
    fmt::print("\ncuda_pageable, cuda_bounce, cuda_register, cuda_gds (into GPU memory)\n"
               "  not built: {}\n", why);
  }
  fmt::print("\nevery strategy also takes these options, for what happens after the load "
             "(mmap:consume=forward:bind=copy):\n");
  for (const auto& o : UseOptionSpecs()) {
    fmt::print("  {}={}  ({}) {}\n", o.name, o.default_value, KindText(o), o.help);
  }
  fmt::print("and {}=TEXT (letters, digits, _ - .), which changes nothing in the load: two "
             "labels of one strategy are two groups of runs, an A/A comparison "
             "(mmap_seq:label=a,mmap_seq:label=b)\n", kLabelOption);
  return 0;
}

// `cache drop|warm|status FILE`: the runner's cache preparation on its own, for tools that
// time something else (fio) against a checked page-cache state.
int CacheCommand(const std::string& action, const std::string& file, bool json) {
  const std::string cmd = "cache " + action;
  UniqueFd fd;
  Status s = OpenReadOnly(file, 0, &fd);
  if (!s.ok()) return Fail(cmd.c_str(), s);
  DropMethod drop = DropMethod::kDropCaches;
  if (action == "drop") s = DropFileCache(file, &drop);
  if (action == "warm") s = WarmFile(file);
  Residency r;
  if (s.ok()) s = MeasureResidency(file, &r);
  if (!s.ok()) return Fail(cmd.c_str(), s);
  const double frac = r.fraction();
  const bool reached = action == "drop"   ? frac <= kColdMaxResident
                       : action == "warm" ? frac >= kWarmMinResident
                                          : true;
  if (json) {
    nlohmann::ordered_json j{{"file", file},
                             {"action", action},
                             {"resident", frac},
                             {"resident_pages", r.resident_pages},
                             {"total_pages", r.total_pages},
                             {"method", ResidencyMethod()},
                             {"state_reached", reached}};
    if (action == "drop") j["drop_method"] = DropMethodName(drop);
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}: {:.2f}% resident ({} of {} pages, {}){}\n", file, frac * 100,
               r.resident_pages, r.total_pages, ResidencyMethod(),
               action == "drop" ? fmt::format(" after {}", DropMethodName(drop)) : "");
  }
  if (!reached) {
    fmt::print(stderr, "loadbench {}: {}: still {:.2f}% resident, the {} state was not reached\n",
               cmd, file, frac * 100, action == "drop" ? "cold" : "warm");
    return 1;
  }
  return 0;
}

// --reps N|auto and the --auto-* options, which `run` and `experiment` share.
struct RepsCli {
  std::string reps, target, budget;
  int min_rounds = -1, max_rounds = -1;
};

void AddRepsOptions(CLI::App* cmd, RepsCli* r, const std::string& reps_help) {
  cmd->add_option("--reps", r->reps,
                  reps_help + "; 'auto': rounds until every paired ratio with the baseline is "
                              "known within ±target (95% interval), see --auto-*");
  cmd->add_option("--auto-target", r->target,
                  "With --reps auto: the interval's half width to reach, relative (0.1 or 10%; "
                  "default 10%)");
  cmd->add_option("--auto-min-rounds", r->min_rounds,
                  "With --reps auto: rounds before the target is looked at (default 6: fewer "
                  "pairs give no 95% interval)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--auto-max-rounds", r->max_rounds,
                  "With --reps auto: the most rounds (default 30)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--auto-budget", r->budget,
                  "With --reps auto: no round is started that would end past this time (90s, "
                  "30min, 2h; default none)");
}

// Fills the options given; `reps` 0 when --reps was not.
Status ParseReps(const RepsCli& r, int* reps, bool* auto_reps, double* target, double* budget_s,
                 int* min_rounds, int* max_rounds) {
  *auto_reps = r.reps == "auto";
  if (!r.reps.empty() && !*auto_reps) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(r.reps, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != r.reps.size() || v < 1 || v > 100000) {
      return Status::BadInput(
          fmt::format("--reps: '{}' is not a number of rounds (1 to 100000) or auto", r.reps));
    }
    *reps = static_cast<int>(v);
  }
  if (!r.target.empty()) LB_RETURN_IF_ERROR(ParseTarget(r.target, "--auto-target", target));
  if (!r.budget.empty()) LB_RETURN_IF_ERROR(ParseDuration(r.budget, "--auto-budget", budget_s));
  *min_rounds = r.min_rounds;
  *max_rounds = r.max_rounds;
  return Status::Ok();
}

}  // namespace
}  // namespace loadbench

int main(int argc, char** argv) {
  using namespace loadbench;
  CLI::App app{
      "loadbench: measures how model weight files get from disk into memory, and what each way "
      "costs in time, memory, page faults and CPU."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(LOADBENCH_VERSION " (" LOADBENCH_COMMIT ")"));

  // gen
  GenOptions gen;
  std::string gen_size, gen_align;
  auto* gen_cmd = app.add_subcommand(
      "gen", "Generate a model-shaped weight file with deterministic, incompressible content "
             "(reuses an existing file of the same spec)");
  std::string presets;
  for (const auto& p : PresetNames()) presets += (presets.empty() ? "" : "|") + p;
  gen_cmd->add_option("--preset", gen.preset, "Model shape: " + presets)->capture_default_str();
  gen_cmd->add_option("--size", gen_size, "Target size of the tensor data, e.g. 2GiB, 512MiB")
      ->required();
  gen_cmd->add_option("--format", gen.format,
                      "File format: wlf, safetensors or gguf (the same tensors and bytes in "
                      "each for the same preset, size, dtype and seed)")
      ->capture_default_str();
  gen_cmd->add_option("--out", gen.out_path, "Output file")->required();
  gen_cmd->add_option("--seed", gen.seed, "Content seed")->capture_default_str();
  gen_cmd->add_option("--align", gen_align,
                      "Tensor alignment in bytes, a power of two: WLF >= 64 (default 4096), "
                      "GGUF (default 32, as llama.cpp writes); safetensors has none");
  gen_cmd->add_option("--dtype", gen.dtype, "Element type: bf16 or f16")->capture_default_str();
  gen_cmd->add_option("--endian", gen.endian,
                      "Byte order: little or big (WLF only; every field and tensor element "
                      "byte-swapped, the same numbers as the little-endian file)")
      ->capture_default_str();
  gen_cmd->add_option("--misalign", gen.misalign,
                      "Start every tensor this many bytes (0 to 63) past a 64-byte boundary "
                      "(safetensors only)")
      ->capture_default_str();
  gen_cmd->add_option("--threads", gen.threads, "Generator threads (0: one per core)")
      ->capture_default_str();
  bool gen_quiet = false, gen_dry_run = false;
  gen_cmd->add_flag("--quiet", gen_quiet, "No progress output");
  gen_cmd->add_flag("--dry-run", gen_dry_run, "Print the model shape and file size; write nothing");

  // inspect
  std::string inspect_file;
  bool inspect_json = false;
  auto* inspect_cmd =
      app.add_subcommand("inspect", "Validate a weight file (WLF, safetensors or GGUF, told "
                                    "apart by content) and print its header and tensor table");
  inspect_cmd->add_option("file", inspect_file, "Weight file")->required();
  inspect_cmd->add_flag("--json", inspect_json, "Print JSON");

  // run
  RunOptions run;
  std::string run_strategies = "fread,mmap,mmap_seq", run_cache = "both";
  auto* run_cmd = app.add_subcommand(
      "run", "Load a file with each strategy in a fresh worker process, cold and/or warm, "
             "verify every load by checksum, and record the runs");
  run_cmd->add_option("--file", run.file, "Weight file")->required();
  run_cmd->add_option("--strategies", run_strategies,
                      "Comma-separated strategies, each with optional :key=value options, "
                      "e.g. fread:chunk=4MiB,mmap (see `loadbench list`)")
      ->capture_default_str();
  run_cmd->add_option("--cache", run_cache, "Cache state: cold, warm or both")
      ->check(CLI::IsMember({"cold", "warm", "both"}))
      ->capture_default_str();
  RepsCli run_reps;
  AddRepsOptions(run_cmd, &run_reps,
                 "Rounds: in each, every strategy runs once per cache state (default 5)");
  std::string run_order = "interleaved";
  run_cmd->add_option("--order", run_order,
                      "Order of the strategies within each round: interleaved (rotated by one "
                      "each round) or shuffled (seeded by --seed)")
      ->check(CLI::IsMember({"interleaved", "shuffled"}))
      ->capture_default_str();
  run_cmd->add_option("--seed", run.seed, "Seed of the shuffled order")->capture_default_str();
  run_cmd->add_flag("--ceiling", run.ceiling,
                    "A ceiling run in every cold round: a raw O_DIRECT read of the file through "
                    "io_uring at depth 32, the device's speed at that moment");
  run_cmd->add_option("--baseline", run.baseline,
                      "The strategy (as written in --strategies) every paired ratio is against "
                      "(default: fread when listed, else the first)");
  run_cmd->add_option("--out", run.out_dir,
                      "Results folder (default: results/run-<UTC time>); must not hold runs yet");
  run_cmd->add_option("--experiment", run.experiment, "Name recorded in every run")
      ->capture_default_str();
  run_cmd->add_option("--timeout", run.timeout_s, "Seconds before a run is killed (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  std::string run_counters = "default";
  run_cmd->add_option("--counters", run_counters,
                      "perf events counted over each load, by libpfm4 name (e.g. "
                      "perf::PAGE-FAULTS,CYCLES); 'default' is the software faults, switches, "
                      "migrations and task clock plus CYCLES, INSTRUCTIONS, CACHE-MISSES and "
                      "DTLB-LOAD-MISSES; 'none' counts nothing. Events this machine cannot "
                      "count are null, with the reason in env.json")
      ->capture_default_str();
  run_cmd->add_option("--sample-ms", run.sample_ms,
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
  run_cmd->add_option("--procs", run.procs,
                      "Workers loading the file at the same time in every run (each is a run "
                      "record; memory is measured while all hold their load)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();

  // Use options for every strategy that does not set its own (mmap:bind=copy keeps copy).
  std::map<std::string, std::string> run_use;
  for (const char* name : {"consume", "bind", "transform", "place"}) {
    const OptionSpec* o = nullptr;
    for (const OptionSpec& u : UseOptionSpecs()) o = u.name == name ? &u : o;
    run_cmd
        ->add_option(fmt::format("--{}", name), run_use[name],
                     fmt::format("{} (default {}): {}; for every strategy that does not set "
                                 "{}= itself",
                                 fmt::join(o->choices, "|"), o->default_value, o->help, name))
        ->check(CLI::IsMember(o->choices));
  }

  std::string run_memory_limit;
  run_cmd->add_option("--memory-limit", run_memory_limit,
                      "Run every worker in a memory cgroup with this limit (e.g. 4GiB), so that "
                      "its page cache and anonymous memory are charged as in a container "
                      "(cgroup v2, else v1; root only)");

  // experiment
  ExperimentOptions exp;
  auto* exp_cmd = app.add_subcommand(
      "experiment",
      "Run an experiment file (experiments/*.toml): generate its files, run its plan with a "
      "progress line, and resume it when its results folder already holds some of its runs");
  exp_cmd->add_option("file", exp.path, "Experiment file (TOML)")->required();
  exp_cmd->add_option("--out", exp.out_dir,
                      "Results folder (default: results/<experiment name>); one that holds "
                      "some of this experiment's runs is resumed");
  exp_cmd->add_option("--data", exp.data_dir, "Where generated files are cached by spec")
      ->capture_default_str();
  RepsCli exp_reps;
  AddRepsOptions(exp_cmd, &exp_reps, "Rounds, instead of the file's reps");
  exp_cmd->add_flag("--dry-run", exp.dry_run,
                    "Print the plan (runs, disk needed, a time estimate from the probe); run "
                    "and write nothing");
  exp_cmd->add_flag("--quiet", exp.quiet, "No progress line and no per-run lines");
  exp_cmd->add_option("--seed", exp.seed,
                      "Seed of the shuffled order, instead of the file's (each repetition of an "
                      "A/A calibration draws its own orders)");
  exp_cmd->add_flag("--cleanup", exp.cleanup,
                    "Remove the files this command generated once every run is done");

  bool list_json = false;
  auto* list_cmd = app.add_subcommand(
      "list", "List the strategies, their options and flags, and whether each runs here");
  list_cmd->add_flag("--json", list_json, "Print JSON");

  // cache
  std::string cache_action, cache_file;
  bool cache_json = false;
  auto* cache_cmd = app.add_subcommand(
      "cache", "Drop a file from the page cache, or warm it, and check the result; or report "
               "how much of it is resident. Exit 0 when the state was reached, 1 when not");
  cache_cmd->add_option("action", cache_action, "drop (cold: <= 1% resident), warm (>= 99%), status")
      ->required()
      ->check(CLI::IsMember({"drop", "warm", "status"}));
  cache_cmd->add_option("file", cache_file, "The file")->required();
  cache_cmd->add_flag("--json", cache_json, "Print JSON");

  // probe
  ProbeOptions probe;
  auto* probe_cmd = app.add_subcommand(
      "probe", "Measure this machine's ceilings (device, page cache, memcpy, page faults) with "
               "a scratch file, print them with the settings that shape results, and store "
               "them in env.json");
  probe_cmd->add_option("--dir", probe.dir, "Where the scratch file goes (created if missing)")
      ->capture_default_str();
  probe_cmd->add_option("--size", probe.size, "Scratch file size, e.g. 1GiB, 64MiB")
      ->capture_default_str();
  probe_cmd->add_option("--out", probe.out_dir, "Results folder (default: results/probe-<UTC time>)");
  probe_cmd->add_flag("--json", probe.json, "Print the probe as JSON instead of the table");

  // worker (internal: the runner's child process)
  WorkerRequest worker;
  int worker_fd = 1;
  auto* worker_cmd = app.add_subcommand("worker", "Internal: one load in a worker process");
  worker_cmd->group("");  // hidden from --help
  worker_cmd->add_option("--file", worker.file)->required();
  worker_cmd->add_option("--strategy", worker.strategy)->required();
  worker_cmd->add_option("--result-fd", worker_fd)->capture_default_str();
  std::string worker_counters = "none";
  worker_cmd->add_option("--counters", worker_counters)->capture_default_str();
  worker_cmd->add_option("--hold-fd", worker.hold_fd)->capture_default_str();
  std::string worker_expect = "none";
  worker_cmd->add_option("--expect-checksum", worker_expect)->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; a usage error is one line and exit code 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "loadbench: {} (see --help)\n", e.what());
    return 2;
  }

  if (*gen_cmd) {
    Status s = ParseBytes(gen_size, "--size", &gen.size_bytes);
    uint64_t align = 0;
    if (s.ok() && !gen_align.empty()) s = ParseBytes(gen_align, "--align", &align);
    if (!s.ok()) return Fail("gen", s);
    gen.align = align;
    gen.progress = !gen_quiet;
    if (gen_dry_run) {
      GenPlan plan;
      s = PlanGenerated(gen, &plan);
      if (!s.ok()) return Fail("gen", s);
      fmt::print("{}\n{} tensors, {} of tensor data, {} file {} ({} bytes)\n",
                 plan.model.description, plan.model.tensors.size(),
                 FormatBytes(plan.model.tensor_bytes), gen.format,
                 FormatBytes(plan.layout.file_size), plan.layout.file_size);
      return 0;
    }
    InstallInterruptHandlers();
    GenResult r;
    s = Generate(gen, &r);
    if (!s.ok()) return Interrupted() ? 130 : Fail("gen", s);
    if (r.reused) {
      fmt::print("{}: reusing existing file of the same spec ({}, {} tensors, checksum {:016x})\n",
                 gen.out_path, FormatBytes(r.file_bytes), r.tensor_count, r.checksum);
    } else {
      fmt::print("{}: wrote {} ({} tensors, checksum {:016x}) in {:.2f} s, {:.0f} MB/s\n",
                 gen.out_path, FormatBytes(r.file_bytes), r.tensor_count, r.checksum, r.seconds,
                 r.seconds > 0 ? r.file_bytes / r.seconds / 1e6 : 0.0);
    }
    fmt::print("{}\n", r.description);
    return 0;
  }
  if (*inspect_cmd) return Inspect(inspect_file, inspect_json);
  if (*list_cmd) return List(list_json);
  if (*cache_cmd) return CacheCommand(cache_action, cache_file, cache_json);
  if (*probe_cmd) {
    probe.command_line = JoinArgs(argc, argv);
    return ProbeMain(probe);
  }
  if (*worker_cmd) {
    Status s = ParseCounterList(worker_counters, &worker.counters);
    if (!s.ok()) return Fail("worker", s);
    if (worker_expect != "none") {
      size_t used = 0;
      try {
        worker.expect_checksum = std::stoull(worker_expect, &used, 16);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != worker_expect.size()) {
        return Fail("worker", Status::BadInput(fmt::format(
                                  "--expect-checksum: '{}' is not a hex number", worker_expect)));
      }
    }
    return WorkerMain(worker, worker_fd);
  }
  if (*exp_cmd) {
    Status s = ParseReps(exp_reps, &exp.reps, &exp.auto_reps, &exp.auto_target,
                         &exp.auto_budget_s, &exp.auto_min_rounds, &exp.auto_max_rounds);
    if (!s.ok()) return Fail("experiment", s);
    exp.command_line = JoinArgs(argc, argv);
    return RunExperiment(exp);
  }
  if (*run_cmd) {
    Status s = ParseStrategyList(run_strategies, &run.strategies);
    std::vector<std::string> written;  // as given, before --consume and the like join them
    for (const StrategySpec& spec : run.strategies) written.push_back(spec.text);
    for (StrategySpec& spec : run.strategies) {
      for (const auto& [name, value] : run_use) {
        if (value.empty() || spec.options.count(name)) continue;
        spec.options[name] = value;
        spec.text += fmt::format(":{}={}", name, value);
      }
    }
    if (s.ok()) s = ParseCounterList(run_counters, &run.counters);
    int reps = 0, min_rounds = -1, max_rounds = -1;
    double target = -1, budget = -1;
    if (s.ok()) {
      s = ParseReps(run_reps, &reps, &run.auto_reps, &target, &budget, &min_rounds, &max_rounds);
    }
    if (s.ok() && !run.auto_reps && (target >= 0 || budget >= 0 || min_rounds >= 0 ||
                                     max_rounds >= 0)) {
      s = Status::BadInput("--auto-* options need --reps auto");
    }
    if (reps > 0) run.reps = reps;
    if (target >= 0) run.autoreps.target = target;
    if (budget >= 0) run.autoreps.budget_s = budget;
    if (min_rounds >= 0) run.autoreps.min_rounds = min_rounds;
    if (max_rounds >= 0) run.autoreps.max_rounds = max_rounds;
    if (s.ok() && run.auto_reps) s = CheckAutoReps(run.autoreps);
    if (s.ok()) s = ParseRoundOrder(run_order, &run.order);
    std::vector<std::string> specs;
    for (const StrategySpec& spec : run.strategies) specs.push_back(spec.text);
    if (run.baseline.empty()) {
      run.baseline = specs.empty() ? "" : specs[0];
      for (size_t i = 0; i < specs.size(); ++i) {
        if (written[i] == "fread") run.baseline = specs[i];
      }
    } else if (s.ok()) {
      const auto it = std::find(written.begin(), written.end(), run.baseline);
      if (it != written.end()) {
        run.baseline = specs[static_cast<size_t>(it - written.begin())];
      } else if (std::find(specs.begin(), specs.end(), run.baseline) == specs.end()) {
        s = Status::BadInput(fmt::format("--baseline '{}' is not one of --strategies ({})",
                                         run.baseline, fmt::join(written, ",")));
      }
    }
    if (!s.ok()) return Fail("run", s);
    if (run_cache == "both") {
      run.caches = {"cold", "warm"};
    } else {
      run.caches = {run_cache};
    }
    if (!run_memory_limit.empty()) {
      s = ParseBytes(run_memory_limit, "--memory-limit", &run.memory_limit);
      if (s.ok() && run.memory_limit == 0) s = Status::BadInput("--memory-limit: must not be 0");
      if (!s.ok()) return Fail("run", s);
    }
    run.command_line = JoinArgs(argc, argv);
    return RunBenchmark(run);
  }
  return 2;
}
