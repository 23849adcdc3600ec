// loadbench: how do multi-GB model weights get from disk into memory fastest, and at what cost?
// The command line: every subcommand's flags, declared with CLI11 in this file only (a large
// header-only library, compiled once), then one call to the subcommand (harness/cli/commands.h).
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/commands.h"
#include "harness/cli/completion.h"
#include "harness/cli/help_text.h"
#include "harness/experiment/experiment.h"
#include "harness/gen/presets.h"
#include "harness/probe/probe.h"
#include "loadbench_commit.h"
#include "loaders/base/units.h"
#include "loaders/use/use.h"

namespace loadbench::cli {
namespace {

// --help wrapped at the reader's width (help_text.h): options and subcommands in two columns,
// descriptions and footers as paragraphs, and whatever line is still too wide (a group's name)
// wrapped last, so that no line of any page runs past the width.
class WrappedFormatter final : public CLI::Formatter {
 public:
  explicit WrappedFormatter(size_t width) : width_(width) {}

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    std::istringstream in(CLI::Formatter::make_help(app, std::move(name), mode));
    std::string out;
    for (std::string line; std::getline(in, line);) {
      out += line.size() <= width_ ? line + "\n" : Wrap(line, width_, "", 6);
    }
    return out;
  }
  std::string make_option(const CLI::Option* opt, bool positional) const override {
    return HelpEntry(make_option_name(opt, positional) + make_option_opts(opt),
                     make_option_desc(opt), get_column_width(), width_);
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    return HelpEntry(sub->get_display_name(true), sub->get_description(), get_column_width(),
                     width_);
  }
  std::string make_description(const CLI::App* app) const override {
    return Wrap(CLI::Formatter::make_description(app), width_, "", 0);
  }
  std::string make_footer(const CLI::App* app) const override {
    return Wrap(app->get_footer(), width_, "", 0);
  }

 private:
  size_t width_;
};

CLI::App* AddGen(CLI::App& app, GenFlags* f) {
  auto* cmd = app.add_subcommand(
      "gen", "Generate a model-shaped weight file with deterministic, incompressible content "
             "(reuses an existing file of the same spec)");
  std::string presets;
  for (const auto& p : PresetNames()) presets += (presets.empty() ? "" : "|") + p;
  cmd->add_option("--preset", f->gen.preset, "Model shape: " + presets)->capture_default_str();
  cmd->add_option("--size", f->size, "Target size of the tensor data, e.g. 2GiB, 512MiB")
      ->required();
  cmd->add_option("--format", f->gen.format,
                  "File format: wlf, safetensors or gguf (the same tensors and bytes in each for "
                  "the same preset, size, dtype and seed)")
      ->capture_default_str();
  cmd->add_option("--out", f->gen.out_path, "Output file")->required();
  cmd->add_option("--seed", f->gen.seed, "Content seed")->capture_default_str();
  cmd->add_option("--align", f->align,
                  "Tensor alignment in bytes, a power of two: WLF >= 64 (default 4096), GGUF "
                  "(default 32, as llama.cpp writes); safetensors has none");
  cmd->add_option("--dtype", f->gen.dtype, "Element type: bf16 or f16")->capture_default_str();
  cmd->add_option("--endian", f->gen.endian,
                  "Byte order: little or big (WLF only; every field and tensor element "
                  "byte-swapped, the same numbers as the little-endian file)")
      ->capture_default_str();
  cmd->add_option("--misalign", f->gen.misalign,
                  "Start every tensor this many bytes (0 to 63) past a 64-byte boundary "
                  "(safetensors only)")
      ->capture_default_str();
  auto* shards = cmd->add_option_function<int64_t>(
      "--shards",
      [f](const int64_t& n) {
        if (n < 1) {
          throw CLI::ValidationError("--shards",
                                     fmt::format("{}: a model has at least 1 shard", n));
        }
        f->gen.shards = static_cast<uint64_t>(n);
      },
      "Write the model in N shards of about equal bytes (NAME-00001-of-0000N.EXT, plus "
      "NAME.EXT.index.json for safetensors and WLF)");
  auto* shard_size = cmd->add_option_function<std::string>(
      "--shard-size",
      [f](const std::string& text) {
        Status s = ParseBytes(text, "--shard-size", &f->gen.shard_size);
        if (s.ok() && f->gen.shard_size == 0) s = Status::BadInput("--shard-size must not be 0");
        if (!s.ok()) throw CLI::ValidationError(s.message());
      },
      "Write the model in shards of at most SIZE tensor bytes each, as Hugging Face's "
      "max_shard_size (a larger tensor gets a shard of its own)");
  shards->excludes(shard_size);
  cmd->add_option("--threads", f->gen.threads, "Generator threads (0: one per core)")
      ->capture_default_str();
  cmd->add_flag("--quiet", f->quiet, "No progress output");
  cmd->add_flag("--dry-run", f->dry_run,
                "Print the model shape, file size and shard plan; write nothing");
  return cmd;
}

CLI::App* AddInspect(CLI::App& app, InspectFlags* f) {
  auto* cmd = app.add_subcommand("inspect", "Validate a weight file (WLF, safetensors or GGUF, "
                                            "told apart by content) and print its header and "
                                            "tensor table");
  cmd->add_option("file", f->file, "Weight file")->required();
  cmd->add_flag("--json", f->json, "Print JSON");
  return cmd;
}

void AddReps(CLI::App* cmd, RepsFlags* f, const std::string& reps_help) {
  cmd->add_option("--reps", f->reps,
                  reps_help + "; 'auto': rounds until every paired ratio with the baseline is "
                              "known within ±target (95% interval), see --auto-*");
  cmd->add_option("--auto-target", f->target,
                  "With --reps auto: the interval's half width to reach, relative (0.1 or 10%; "
                  "default 10%)");
  cmd->add_option("--auto-min-rounds", f->min_rounds,
                  "With --reps auto: rounds before the target is looked at (default 6: fewer "
                  "pairs give no 95% interval)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--auto-max-rounds", f->max_rounds,
                  "With --reps auto: the most rounds (default 30)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--auto-budget", f->budget,
                  "With --reps auto: no round is started that would end past this time (90s, "
                  "30min, 2h; default none)");
}

void AddProfile(CLI::App* cmd, ProfileFlags* f, const std::string& on_help) {
  cmd->add_flag("--profile", f->on,
                on_help + ": perf samples each load (cpu-clock, kernel and user call chains, the "
                          "timed region only) into profiles/RUN_ID.folded, with each thread's "
                          "on-CPU and waiting time (shares of wall time for one thread, of CPU "
                          "time for several); where perf is missing or not permitted each "
                          "record says why and the run goes on (docs/profile.md)");
  cmd->add_option("--profile-hz", f->hz,
                  fmt::format("With --profile: samples per second (default {})", kDefaultProfileHz))
      ->check(CLI::Range(1, kMaxProfileHz));
}

// --no-report and --export, of run and experiment: what ends them once the runs are recorded.
void AddReport(CLI::App* cmd, ReportFlags* f) {
  cmd->add_flag("--no-report", f->no_report,
                "Write no report at the end (also with LOADBENCH_NO_REPORT=1); without it the "
                "runs end as `make run` does: `loadbench report DIR --brief` writes the report "
                "and prints the verdict");
  cmd->add_option("--export", f->exports,
                  "Also export the results' table: FMT (csv, md or json) into FILE, by the "
                  "report; repeatable")
      ->type_size(2)
      ->type_name("FMT FILE");
}

void AddVerbose(CLI::App* cmd, bool* verbose) {
  cmd->add_flag("-v,--verbose", *verbose,
                "A line on stderr for every run recorded (without it: only for runs that failed, "
                "were invalid or unsupported, or carry a warning)");
}

void AddNoWait(CLI::App* cmd, bool* no_wait) {
  cmd->add_flag("--no-wait", *no_wait,
                "While another measurement runs on this machine, refuse (exit 2) instead of "
                "waiting for it to end");
}

// The default of --settle-wait and `system settle --max-wait`: LOADBENCH_SETTLE_WAIT when set (a
// test suite or a script bounds every command's wait at once), else 60 s. false, with the line
// to say, when it is set to something that is not a number of seconds.
bool SettleWaitDefault(double* seconds, std::string* error) {
  *seconds = 60;
  const char* v = std::getenv("LOADBENCH_SETTLE_WAIT");
  if (v == nullptr || *v == '\0') return true;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (*end != '\0' || !(d >= 0) || d > 86400) {
    *error = fmt::format("LOADBENCH_SETTLE_WAIT: '{}' is not a number of seconds (0 to 86400)", v);
    return false;
  }
  *seconds = d;
  return true;
}

void AddSettleWait(CLI::App* cmd, double* seconds) {
  cmd->add_option("--settle-wait", *seconds,
                  "Seconds to wait, before the runs, for a busy machine to settle (other "
                  "processes' CPU time, I/O in flight, dirty pages, sampled from /proc); still "
                  "busy after it: a WARNING naming what is busy, recorded in env.json. 0: check "
                  "once, no wait. Default: LOADBENCH_SETTLE_WAIT, else 60")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

// run's flags on what is measured besides time, and how.
void AddRunMeasurement(CLI::App* cmd, RunFlags* f) {
  cmd->add_option("--counters", f->counters,
                  "perf events counted over each load, by libpfm4 name (e.g. "
                  "perf::PAGE-FAULTS,CYCLES); 'default' is the software faults, switches, "
                  "migrations and task clock plus CYCLES, INSTRUCTIONS, CACHE-MISSES and "
                  "DTLB-LOAD-MISSES; 'none' counts nothing. Events this machine cannot count are "
                  "null, with the reason in env.json")
      ->capture_default_str();
  cmd->add_option("--sample-ms", f->sample_ms,
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
  cmd->add_option("--procs", f->procs,
                  "Workers loading the file at the same time in every run (each is a run record; "
                  "memory is measured while all hold their load)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--pattern", f->pattern,
                  "What each of the --procs workers loads: replicated (the whole model), tp or "
                  "tp:DIM (its 1/N slice of every tensor along dimension DIM, default 0), pp (a "
                  "contiguous range of layers), files (its share of a sharded model's files); "
                  "docs/many-readers.md")
      ->capture_default_str();
  // Use options for every strategy that does not set its own (mmap:bind=copy keeps copy).
  for (const char* name : {"consume", "bind", "transform", "place"}) {
    const OptionSpec* o = nullptr;
    for (const OptionSpec& u : UseOptionSpecs()) o = u.name == name ? &u : o;
    cmd->add_option(fmt::format("--{}", name), f->use[name],
                    fmt::format("{} (default {}): {}; for every strategy that does not set {}= "
                                "itself",
                                fmt::join(o->choices, "|"), o->default_value, o->help, name))
        ->check(CLI::IsMember(o->choices));
  }
  cmd->add_option("--memory-limit", f->memory_limit,
                  "Run every worker in a memory cgroup with this limit (e.g. 4GiB), so that its "
                  "page cache and anonymous memory are charged as in a container (cgroup v2, "
                  "else v1; root only)");
  cmd->add_option("--storage", f->storages,
                  "Put the model on a storage the tool makes for the runs and removes after: "
                  "KIND[:OPTION=VALUE...], KIND one of ext4, xfs, btrfs, squashfs, erofs, "
                  "overlay, tmpfs, here; a device class on a loop-backed kind: preset=NAME, "
                  "read_bps=SIZE, read_iops=N (e.g. xfs:preset=gp3); probe=off skips its own "
                  "probe (15 to 25 s). Repeat it for several, each with rounds of its own; root "
                  "only but for here (docs/storage.md)");
}

CLI::App* AddRun(CLI::App& app, RunFlags* f) {
  auto* cmd = app.add_subcommand(
      "run", "Load a file with each strategy in a fresh worker process, cold and/or warm, verify "
             "every load by checksum, and record the runs; then write their report and print "
             "the verdict");
  cmd->add_option("--file", f->file, "Weight file")->required();
  cmd->add_option("--strategies", f->strategies,
                  "Comma-separated strategies, each with optional :key=value options, e.g. "
                  "fread:chunk=4MiB,mmap (see `loadbench list`); 'none' with --exec for only "
                  "commands")
      ->capture_default_str();
  cmd->add_option("--exec", f->exec,
                  "LABEL=COMMAND: also run this command as a strategy (row LABEL), measured like "
                  "a worker; COMMAND is split at spaces ('...' and \"...\" quote), no shell; "
                  "{file}, {dir}, {bytes} and {peers} are filled in (docs/exec.md). Repeatable. "
                  "It runs whatever it says: give only commands you would run yourself")
      ->take_all();
  cmd->add_option("--exec-shell", f->exec_shell,
                  "LABEL=COMMAND: as --exec, but COMMAND is run by /bin/sh -c. Repeatable")
      ->take_all();
  cmd->add_option("--cache", f->cache, "Cache state: cold, warm or both")
      ->check(CLI::IsMember({"cold", "warm", "both"}))
      ->capture_default_str();
  AddReps(cmd, &f->reps,
          "Rounds: in each, every strategy runs once per cache state (default 6: the fewest "
          "whose paired ratios get a 95% interval)");
  cmd->add_option("--order", f->order,
                  "Order of the strategies within each round: balanced (a Williams design, "
                  "seeded by --seed: each follows every other equally often), interleaved "
                  "(rotated by one each round) or shuffled (seeded by --seed)")
      ->check(CLI::IsMember({"balanced", "interleaved", "shuffled"}))
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of the balanced or shuffled order")
      ->capture_default_str();
  cmd->add_flag("--ceiling", f->ceiling,
                "A ceiling run in every cold round: every byte of the files read cold by the "
                "fastest read recipe (the probe's, else the first round tries them all), the "
                "device's speed at that moment");
  cmd->add_option("--baseline", f->baseline,
                  "The strategy (as written in --strategies) every paired ratio is against "
                  "(default: fread when listed, else the first)");
  cmd->add_option("--out", f->out,
                  "Results folder (default: results/run-<UTC time>); must not hold runs yet, "
                  "unless --resume");
  cmd->add_flag("--resume", f->resume,
                "Go on with a run whose --out holds some of its runs (after an interruption or a "
                "full disk): the runs it holds are kept and not run again; give the same flags");
  cmd->add_flag("--dry-run", f->dry_run,
                "Print the plan (runs, rounds, a time estimate from the probe); run and write "
                "nothing");
  AddReport(cmd, &f->report);
  AddNoWait(cmd, &f->no_wait);
  AddSettleWait(cmd, &f->settle_wait_s);
  AddVerbose(cmd, &f->verbose);
  cmd->add_option("--experiment", f->experiment, "Name recorded in every run")
      ->capture_default_str();
  cmd->add_option("--timeout", f->timeout_s, "Seconds before a run is killed (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--tune", f->tune,
                  "The machine's state for the runs, as an experiment's [system] tune: off (run "
                  "in the state found), on (set what `loadbench system tune` sets before the "
                  "first run and restore it at the end; exit 1 where it cannot be set) or auto "
                  "(tuned where this machine lets the command, else said and run as found)")
      ->check(CLI::IsMember({"off", "on", "auto"}))
      ->capture_default_str();
  AddRunMeasurement(cmd, f);
  AddProfile(cmd, &f->profile, "A CPU profile of every load");
  return cmd;
}

CLI::App* AddExperiment(CLI::App& app, ExperimentFlags* f) {
  auto* cmd = app.add_subcommand(
      "experiment",
      "Run an experiment file (experiments/*.toml): generate its files, run its plan with a "
      "progress line into a fresh results folder, then write its report and print the verdict; "
      "--resume goes on with an interrupted one");
  cmd->add_option("file", f->path,
                  "Experiment file (TOML), or the NAME of one in the tool's experiments/ "
                  "(quick, all-strategies, ...)")
      ->required();
  cmd->add_option("--out", f->out_dir,
                  "Results folder (default: a fresh results/NAME-<UTC time>); one that already "
                  "holds runs is refused unless --resume");
  const CLI::Option* resume =
      cmd->add_option("--resume", f->resume_dir,
                      "Go on with the runs of DIR (or --out), which keeps them and runs the rest; "
                      "without DIR, with the newest results/NAME-* that is incomplete (said in a "
                      "line). The command to type is printed when an experiment stops early")
          ->expected(0, 1)
          ->type_name("[DIR]");
  cmd->parse_complete_callback([f, resume] { f->resume = resume->count() > 0; });
  cmd->add_option("--data", f->data_dir, "Where generated files are cached by spec")
      ->capture_default_str();
  AddReps(cmd, &f->reps, "Rounds, instead of the file's reps");
  cmd->add_flag("--dry-run", f->dry_run,
                "Print the plan (runs, disk needed, a time estimate from the probe); run and "
                "write nothing");
  cmd->add_flag("--quiet", f->quiet, "No progress line, no per-run lines and no summary");
  cmd->add_option("--seed", f->seed,
                  "Seed of the balanced or shuffled order, instead of the file's (each "
                  "repetition of an A/A calibration draws its own orders)");
  cmd->add_flag("--cleanup", f->cleanup,
                "Remove the files this command generated once every run is done");
  cmd->add_option("--tune", f->tune,
                  "The machine's state for the runs, instead of the file's [system] tune: off "
                  "(run in the state found), on or auto (as `run --tune`); the same experiment "
                  "tuned and untuned is two states of one machine (make machines)")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  AddNoWait(cmd, &f->no_wait);
  AddSettleWait(cmd, &f->settle_wait_s);
  AddVerbose(cmd, &f->verbose);
  AddProfile(cmd, &f->profile, "A CPU profile of every load, whatever the file's profile key says");
  AddReport(cmd, &f->report);
  return cmd;
}

CLI::App* AddList(CLI::App& app, bool* json) {
  auto* cmd = app.add_subcommand(
      "list", "List the strategies, their options and flags, and whether each runs here");
  cmd->add_flag("--json", *json, "Print JSON");
  return cmd;
}

CLI::App* AddCache(CLI::App& app, CacheFlags* f) {
  auto* cmd = app.add_subcommand(
      "cache", "Drop a file from the page cache, or warm it, and check the result; or report "
               "how much of it is resident. Exit 0 when the state was reached, 1 when not");
  cmd->add_option("action", f->action, "drop (cold: <= 1% resident), warm (>= 99%), status")
      ->required()
      ->check(CLI::IsMember({"drop", "warm", "status"}));
  cmd->add_option("file", f->file, "The file")->required();
  cmd->add_flag("--json", f->json, "Print JSON");
  AddNoWait(cmd, &f->no_wait);
  return cmd;
}

CLI::App* AddProbe(CLI::App& app, ProbeOptions* f) {
  auto* cmd = app.add_subcommand(
      "probe", "Measure this machine's ceilings (device, page cache, memcpy, memory fill, "
               "first touches of 4 KiB and 2 MiB pages) with a scratch file, print them with the "
               "settings that shape results, and store them in env.json");
  cmd->add_option("--dir", f->dir, "Where the scratch file goes (created if missing)")
      ->capture_default_str();
  cmd->add_option("--size", f->size, "Scratch file size, e.g. 1GiB, 64MiB")->capture_default_str();
  cmd->add_option("--out", f->out_dir, "Results folder (default: results/probe-<UTC time>)");
  cmd->add_flag("--json", f->json, "Print the probe as JSON instead of the table");
  cmd->add_option("--storage", f->storage,
                  "Probe a storage instead of the machine: make KIND[:OPTION=VALUE...] (as run "
                  "--storage: e.g. xfs:read_bps=2GB:read_iops=300) with the scratch file in it "
                  "and measure its device only, cold, each figure at most about 1.25 s: every "
                  "read recipe, O_DIRECT reads of 64 KiB to 4 MiB at depth 1 and deeper, 4-16 KiB "
                  "random reads per second, and the device's request size; not the memory or "
                  "fault figures, and not cached (root but for here; docs/probe.md)");
  AddNoWait(cmd, &f->no_wait);
  return cmd;
}

CLI::App* AddLock(CLI::App& app, LockFlags* f) {
  auto* cmd = app.add_subcommand(
      "lock", "Run a command as one measurement: it holds the machine lock that run, experiment "
              "and probe take (waiting for the measurement that runs), the loadbench commands "
              "it starts measure under it, and its whole process group is killed when it ends");
  AddNoWait(cmd, &f->no_wait);
  cmd->prefix_command();  // without --: everything from the command on is the command's own
  cmd->footer("Usage: loadbench lock [--no-wait] [--] COMMAND [ARGS...]");
  return cmd;
}

CLI::App* AddNetnsExec(CLI::App& app, NetnsExecFlags* f) {
  auto* cmd = app.add_subcommand(
      "netns-exec",
      "Run a command line in a node of a [cluster], as a remote shell runs one on a host: "
      "mpirun's remote shell for the cluster's nodes (docs/fleet.md). Only a namespace that the "
      "loadbench command above it made and lists in its journal, with the node's own TMPDIR; "
      "anything else is exit 2");
  cmd->add_option("netns", f->netns,
                  "The node's namespace (loadbench-..., as `ip netns list` "
                  "names it)")
      ->required();
  cmd->footer("Usage: loadbench netns-exec NETNS COMMAND [ARGS...] (run by /bin/sh -c)");
  return cmd;
}

CLI::App* AddSystem(CLI::App& app, SystemFlags* f) {
  auto* cmd = app.add_subcommand(
      "system", "The machine's state: show every kernel setting that changes a load's time, tune "
                "the ones a measurement should not leave to chance, reset them to what was "
                "there, wait for the machine to settle");
  cmd->require_subcommand(1);
  auto* show = cmd->add_subcommand(
      "show",
      "Print every setting that changes a load's time (THP, free page reporting, "
      "swappiness, dirty limits and writeback, the data device's read-ahead and I/O "
      "scheduler, the CPU governor, the balloon, DAMON), one a line with where it is read, and "
      "whether the machine is in the tuned state; reads only");
  show->add_option("--data", f->data_dir,
                   "The folder whose block device's read-ahead and scheduler are shown (the "
                   "nearest existing parent when it does not exist)")
      ->capture_default_str();
  show->add_flag("--json", f->json, "Print JSON (env.json's `system`, and the state file)");
  auto* tune = cmd->add_subcommand(
      "tune", "Set what a measurement should not leave to chance: free page reporting held off "
              "(page_reporting_order above the largest free block order), the CPU governor "
              "`performance` where there is one and DAMON's pageout stopped; save what was there "
              "for `system reset`. Root "
              "only: a setting it cannot set is named, exit 1, and nothing is left half-set");
  tune->add_option("--page-reporting", f->page_reporting,
                   "off: hold free page reporting off; keep: leave it as it is (recorded as "
                   "the choice, so the state still counts as tuned)")
      ->check(CLI::IsMember({"off", "keep"}))
      ->capture_default_str();
  AddNoWait(tune, &f->no_wait);
  tune->add_option("command", f->command,
                   "After --: a command to run tuned, the machine restored when it ends");
  tune->footer(
      "Usage: loadbench system tune [--page-reporting off|keep] [--no-wait] [-- COMMAND "
      "[ARGS...]]\nWith a COMMAND, the machine is tuned while COMMAND runs and restored when it "
      "ends (nothing is saved for `system reset`; a killed tune is restored by the next command "
      "that measures), the machine lock held only while the settings change; where they cannot "
      "be set (not root), it says why and COMMAND runs untuned. The exit code is COMMAND's.");
  auto* reset = cmd->add_subcommand(
      "reset", "Write back what `system tune` found, from its state file (says so when there is "
               "none)");
  AddNoWait(reset, &f->no_wait);
  auto* settle = cmd->add_subcommand(
      "settle", "Wait until the machine is quiet (the check run and experiment make before their "
                "runs: other processes' CPU time, I/O in flight, dirty pages), saying what is "
                "busy as it waits; then print how long it waited. Exit 0 when it settled, 1 when "
                "still busy at the end of the wait. It writes dirty pages back (sync) first, as "
                "run and experiment do, and changes nothing else");
  settle
      ->add_option("--max-wait", f->settle_wait_s,
                   "Seconds to wait at most (default: LOADBENCH_SETTLE_WAIT, else 60)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  settle->add_flag("--json", f->json, "Print the check as JSON (as env.json's `stability`)");
  for (CLI::App* sub : {show, tune, reset, settle}) {
    sub->parse_complete_callback([f, sub] { f->action = sub->get_name(); });
  }
  return cmd;
}

CLI::App* AddServe(CLI::App& app, ServeFlags* f) {
  auto* cmd = app.add_subcommand(
      "serve", "Serve a folder on 127.0.0.1 for remote models: over HTTP with nginx, or as S3 "
               "buckets with s3rver, on a free port; prints `serving DIR at ENDPOINT (PROGRAM "
               "VERSION)` once it answers, and stops the server, leaving nothing of it, at "
               "SIGINT or SIGTERM");
  cmd->add_option("--kind", f->kind, "http (nginx) or s3 (s3rver)")->required();
  cmd->add_option("--root", f->root,
                  "The folder served: http: its files at /; s3: s3rver's directory, whose "
                  "subfolders are the buckets")
      ->required();
  cmd->add_option("--limit-rate", f->limit_rate,
                  "http only: at most this many bytes/s per connection (nginx limit_rate), "
                  "e.g. 100MiB");
  cmd->add_option("--bucket", f->buckets, "s3 only: a bucket to create at start (repeatable)");
  cmd->add_flag("--until-stdin-closes", f->until_stdin_closes,
                "Also stop when standard input closes (the process that started it ended)");
  return cmd;
}

CLI::App* AddPut(CLI::App& app, PutFlags* f) {
  auto* cmd = app.add_subcommand(
      "put", "Put a local file into a bucket (one signed PUT, its xxh3-64 in the object's "
             "metadata); skipped when the object there has the same size and checksum. The "
             "endpoint and keys come as for s3:// models (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, "
             "... or ~/.aws/credentials)");
  cmd->add_option("FILE", f->file, "The local file")->required();
  cmd->add_option("NAME", f->name, "Where it goes: s3://BUCKET/KEY")->required();
  return cmd;
}

// Internal: the runner's child process (harness/launch/worker.h); hidden from --help.
CLI::App* AddWorker(CLI::App& app, WorkerFlags* f) {
  auto* cmd = app.add_subcommand("worker", "Internal: one load in a worker process");
  cmd->group("");
  cmd->add_option("--request", f->request, "What it loads and how (JSON)")->required();
  return cmd;
}

// The analysis subcommands, for --help and completion only: main runs them before CLI11 sees
// their arguments, which are all the Python module's.
void AddAnalysis(CLI::App& app) {
  for (const AnalysisSubcommand& a : AnalysisSubcommands()) {
    app.add_subcommand(a.name, a.summary)
        ->group("Analysis (python3 -m analysis.NAME; every argument is its own, --help too)");
  }
}

CLI::App* AddCompletion(CLI::App& app, std::string* shell) {
  auto* cmd = app.add_subcommand(
      "completion", "Print a shell completion script made from these subcommands and their "
                    "options, so that it never lags behind them: source <(loadbench completion "
                    "bash)");
  cmd->add_option("shell", *shell, "The shell: bash")->required()->check(CLI::IsMember({"bash"}));
  return cmd;
}

// `app` as completion sees it: its subcommands but the hidden ones (worker), and every name of
// its options.
CompletionCommand CompletionTree(const CLI::App& app) {
  CompletionCommand c;
  c.name = app.get_name();
  for (const CLI::Option* o : app.get_options()) {
    std::vector<std::string> names;
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    c.options.insert(c.options.end(), names.begin(), names.end());
    if (o->get_type_size() != 0) {
      c.options_with_value.insert(c.options_with_value.end(), names.begin(), names.end());
    }
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_group().empty()) c.subcommands.push_back(CompletionTree(*sub));
  }
  return c;
}

// Each page's examples (by its subcommands' path; "" the top), after any footer of its own:
// commands that work as they stand, given the files they name.
const std::vector<std::pair<std::string, std::vector<std::string>>> kExamples = {
    {"",
     {"loadbench experiment quick", "loadbench run --file data/m.wlf --strategies fread,mmap_seq",
      "loadbench report results/quick-20250101-120000", "source <(loadbench completion bash)"}},
    {"gen",
     {"loadbench gen --size 2GiB --out data/m.wlf",
      "loadbench gen --size 512MiB --format safetensors --shards 4 --out data/m.safetensors",
      "loadbench gen --preset moe --size 1GiB --format gguf --out data/moe.gguf --dry-run"}},
    {"inspect", {"loadbench inspect data/m.wlf", "loadbench inspect data/m.gguf --json"}},
    {"run",
     {"loadbench run --file data/m.wlf",
      "loadbench run --file data/m.wlf --strategies fread,mmap_seq,owned --cache cold --reps auto",
      "loadbench run --file data/m.wlf --strategies fread:chunk=4MiB,mmap --dry-run"}},
    {"experiment",
     {"loadbench experiment quick",
      "loadbench experiment experiments/quick.toml --reps 2 --dry-run",
      "loadbench experiment quick --resume"}},
    {"list", {"loadbench list", "loadbench list --json"}},
    {"cache", {"loadbench cache drop data/m.wlf", "loadbench cache status data/m.wlf --json"}},
    {"probe", {"loadbench probe", "loadbench probe --size 256MiB --json"}},
    {"lock",
     {"loadbench lock -- python3 my_loader_bench.py --model m.safetensors",
      "loadbench lock --no-wait -- bash scripts/aa.sh"}},
    {"system",
     {"loadbench system show", "loadbench system tune -- make test",
      "loadbench system settle --max-wait 30"}},
    {"system tune", {"loadbench system tune", "loadbench system tune -- make test"}},
    {"serve",
     {"loadbench serve --kind http --root data",
      "loadbench serve --kind s3 --root data/s3 --bucket models"}},
    {"put",
     {"loadbench put data/m.wlf s3://models/m.wlf",
      "loadbench put data/m.safetensors s3://models/llama/model.safetensors"}},
    {"completion",
     {"source <(loadbench completion bash)",
      "loadbench completion bash > ~/.local/share/bash-completion/completions/loadbench"}},
};

void AddExamples(CLI::App& app) {
  for (const auto& [path, lines] : kExamples) {
    CLI::App* cmd = &app;
    std::istringstream words(path);
    for (std::string w; words >> w;) cmd = cmd->get_subcommand(w);
    std::string text = cmd->get_footer().empty() ? "" : cmd->get_footer() + "\n\n";
    text += "Examples:";
    for (const std::string& l : lines) text += "\n  " + l;
    cmd->footer(text);
  }
}

}  // namespace

int ReportError(const std::string& cmd, const Status& s) {
  fmt::print(stderr, "loadbench {}: {}\n", cmd, s.message());
  return s.exit_code();
}

namespace {

// The arguments that are a command's own, never parsed here, taken into the flags of the
// subcommand that runs it: `lock ... -- COMMAND`, what follows --; `netns-exec NETNS
// COMMAND...`, a remote shell's command line. Returns how many arguments are left to parse.
int CommandsOfTheirOwn(int argc, char** argv, LockFlags* lock, NetnsExecFlags* netns_exec) {
  const std::string sub = argc > 1 ? argv[1] : "";
  if (sub == "netns-exec" && argc > 3 && argv[2][0] != '-') {
    netns_exec->command.assign(argv + 3, argv + argc);
    return 3;
  }
  for (int i = 2; sub == "lock" && i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    lock->command.assign(argv + i + 1, argv + argc);
    return i;
  }
  return argc;
}

// Every subcommand's flags.
struct Commands {
  GenFlags gen;
  InspectFlags inspect;
  RunFlags run;
  ExperimentFlags experiment;
  SystemFlags system;
  bool list_json = false;
  CacheFlags cache;
  ProbeOptions probe;
  LockFlags lock;
  ServeFlags serve;
  PutFlags put;
  WorkerFlags worker;
  NetnsExecFlags netns_exec;
  std::string completion_shell;
};

void Declare(CLI::App& app, Commands* c) {
  AddGen(app, &c->gen);
  AddInspect(app, &c->inspect);
  AddRun(app, &c->run);
  AddExperiment(app, &c->experiment);
  AddList(app, &c->list_json);
  AddCache(app, &c->cache);
  AddProbe(app, &c->probe);
  AddLock(app, &c->lock);
  AddSystem(app, &c->system);
  AddServe(app, &c->serve);
  AddPut(app, &c->put);
  AddWorker(app, &c->worker);
  AddNetnsExec(app, &c->netns_exec);
  AddCompletion(app, &c->completion_shell);
  AddAnalysis(app);
  AddExamples(app);
}

// The parsed subcommand run: its exit code.
int Run(const CLI::App& app, Commands& c, const std::string& command_line) {
  const CLI::App* sub = app.get_subcommands().at(0);  // require_subcommand(1)
  const std::string name = sub->get_name();
  c.probe.command_line = command_line;
  if (name == "gen") return GenCommand(c.gen);
  if (name == "inspect") return InspectCommand(c.inspect);
  if (name == "run") return RunCommand(c.run, command_line);
  if (name == "experiment") return ExperimentCommand(c.experiment, command_line);
  if (name == "list") return ListCommand(c.list_json);
  if (name == "cache") return CacheCommand(c.cache, command_line);
  if (name == "probe") return ProbeMain(c.probe);
  if (name == "lock") {
    for (const std::string& arg : sub->remaining()) c.lock.command.push_back(arg);
    return LockCommand(c.lock, command_line);
  }
  if (name == "system") return SystemCommand(c.system, command_line);
  if (name == "serve") return ServeCommand(c.serve);
  if (name == "put") return PutCommand(c.put);
  if (name == "worker") return WorkerCommand(c.worker);
  if (name == "netns-exec") return NetnsExecCommand(c.netns_exec);
  if (name == "completion") {
    fmt::print("{}", BashCompletion(CompletionTree(app)));
    return 0;
  }
  return 2;
}

}  // namespace
}  // namespace loadbench::cli

int main(int argc, char** argv) {
  using namespace loadbench;
  using namespace loadbench::cli;
  // The analysis subcommands' arguments are all the Python module's: never parsed here.
  for (const AnalysisSubcommand& a : AnalysisSubcommands()) {
    if (argc > 1 && argv[1] == std::string(a.name)) {
      return AnalysisMain(a.name, std::vector<std::string>(argv + 2, argv + argc));
    }
  }
  CLI::App app{
      "loadbench: measures how model weight files get from disk into memory, and what each way "
      "costs in time, memory, page faults and CPU."};
  app.formatter(std::make_shared<WrappedFormatter>(HelpWidth()));  // before the subcommands
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(LOADBENCH_VERSION " (" LOADBENCH_COMMIT ")"));
  Commands c;
  if (std::string error; !SettleWaitDefault(&c.run.settle_wait_s, &error)) {
    fmt::print(stderr, "loadbench: {}\n", error);
    return 2;
  }
  c.experiment.settle_wait_s = c.system.settle_wait_s = c.run.settle_wait_s;
  Declare(app, &c);
  const int parsed_argc = CommandsOfTheirOwn(argc, argv, &c.lock, &c.netns_exec);
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; a usage error is one line and exit code 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "loadbench: {} (see --help)\n", e.what());
    return 2;
  }
  std::string command_line;  // recorded in env.json
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  return Run(app, c, command_line);
}
