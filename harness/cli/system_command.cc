// `loadbench system show|tune|reset|settle`: the machine's state (harness/machine/tuning.h),
// shown, set for measurements and restored, as pyperf's `system` command does; and the wait for
// a busy machine to settle (harness/machine/stability.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/commands.h"
#include "harness/leftovers/leftovers.h"
#include "harness/machine/stability.h"
#include "harness/machine/tune_state.h"
#include "harness/machine/tuning.h"
#include "harness/process/child.h"
#include "harness/process/interrupt.h"
#include "harness/record/record.h"
#include "loaders/base/units.h"

namespace loadbench::cli {
namespace {

// The tune `system tune` saved, if any; a state file that cannot be trusted is said and ignored.
const TuneRecord* Saved(TuneRecord* r) {
  bool found = false;
  const Status s = LoadTuneState(r, &found);
  if (!s.ok()) fmt::print(stderr, "loadbench system show: {}\n", s.message());
  return s.ok() && found ? r : nullptr;
}

void PrintSaved(const TuneRecord* saved) {
  if (saved == nullptr) {
    fmt::print("saved: none ({}: no `loadbench system tune` since boot, or reset since)\n",
               TuneStatePath());
    return;
  }
  std::vector<std::string> changes;
  for (const SettingChange& c : saved->changes) {
    changes.push_back(fmt::format("{} {} -> {}", c.path, c.before, c.after));
  }
  fmt::print("saved: by `loadbench system tune` since {}, page reporting {}; changed: {}; "
             "`loadbench system reset` restores ({})\n",
             saved->since, PageReportingChoiceName(saved->page_reporting),
             changes.empty() ? "nothing" : fmt::format("{}", fmt::join(changes, "; ")),
             TuneStatePath());
}

int Show(const SystemFlags& f) {
  TuneRecord r;
  const TuneRecord* saved = Saved(&r);
  const nlohmann::ordered_json env = SystemEnv(f.data_dir, saved);
  if (f.json) {
    nlohmann::ordered_json j = env;
    j["state_file"] = TuneStatePath();
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  for (const SystemSetting& s : ReadSystemSettings(f.data_dir)) {
    fmt::print("{:<36} {:<12} {}{}\n", s.name, s.value.value_or("none"), s.path,
               s.note.empty() ? "" : "  (" + s.note + ")");
  }
  if (env["tuned"].get<bool>()) {
    fmt::print("state: tuned{}\n", saved != nullptr ? " (by `loadbench system tune`)" : "");
  } else {
    std::vector<std::string> why = env["not_tuned_because"];
    fmt::print("state: not tuned: {}; `loadbench system tune` sets it\n", fmt::join(why, "; "));
  }
  PrintSaved(saved);
  return 0;
}

// The machine, for this change alone: no measurement runs under it.
int Lock(const std::string& cmd, const SystemFlags& f, const std::string& command_line,
         HeldLock* machine) {
  Status s =
      BeginMeasurement("loadbench " + cmd, ThisProcess(command_line, ""), !f.no_wait, machine);
  if (s.ok()) return 0;
  const int code = ReportError(cmd, s);
  return Interrupted() ? 130 : code;
}

// `system tune -- COMMAND`: the machine tuned while COMMAND runs, the changes in this process's
// leftovers journal alone (a killed tune is restored by the next command that measures), the
// machine lock held only while they are made and undone. Where they cannot be made, COMMAND
// runs untuned, and the line says why.
int TuneDuring(const SystemFlags& f, PageReportingChoice choice, const std::string& command_line) {
  const std::string cmd = "system tune";
  std::string program;
  if (Status s = FindProgram(f.command[0], "", &program); !s.ok()) {
    ReportError(cmd, s);
    return 127;  // as a shell says of a command it cannot run
  }
  InstallInterruptHandlers();  // passed on to the command
  std::vector<SettingChange> done;
  {
    HeldLock machine;
    if (int code = Lock(cmd, f, command_line, &machine); code != 0) return code;
    if (Status s = TuneSystem(choice, {}, &done); !s.ok()) {
      fmt::print(stderr, "loadbench {}: not tuned ({}); {} runs untuned\n", cmd, s.message(),
                 f.command[0]);
    }
  }
  for (const SettingChange& c : done) {
    fmt::print(stderr, "loadbench {}: set {}: {} -> {} while {} runs\n", cmd, c.path, c.before,
               c.after, f.command[0]);
  }
  pid_t pid = -1;
  const Status started = StartCommandGroup(f.command, &pid);
  const int code = started.ok() ? WaitForCommandGroup(pid) : 127;
  if (!started.ok()) ReportError(cmd, started);
  if (done.empty()) return code;
  HeldLock machine;
  SystemFlags waiting = f;
  waiting.no_wait = false;  // what was changed is restored, after a measurement begun meanwhile
  if (int locked = Lock(cmd, waiting, command_line, &machine); locked != 0) return locked;
  std::vector<std::string> said;
  const Status restored = RestoreSystem(done, &said);
  for (const std::string& line : said) fmt::print(stderr, "loadbench {}: restored {}\n", cmd, line);
  if (!restored.ok()) ReportError(cmd, restored);
  return code;
}

int Tune(const SystemFlags& f, const std::string& command_line) {
  const std::string cmd = "system tune";
  PageReportingChoice choice = PageReportingChoice::kOff;
  Status s = ParsePageReportingChoice(f.page_reporting, "--page-reporting", &choice);
  if (!s.ok()) return ReportError(cmd, s);
  if (!f.command.empty()) return TuneDuring(f, choice, command_line);
  HeldLock machine;
  if (int code = Lock(cmd, f, command_line, &machine); code != 0) return code;
  TuneRecord r{"system tune", NowStamp("%Y-%m-%dT%H:%M:%SZ"), choice, {}};
  bool found = false;
  if (s = LoadTuneState(&r, &found); !s.ok()) return ReportError(cmd, s);
  r.page_reporting = choice;
  std::vector<SettingChange> done;
  if (s = TuneSystem(choice, {}, &done); !s.ok()) return ReportError(cmd, s);
  // A setting an earlier tune changed keeps the value it held before that one.
  for (const SettingChange& c : done) {
    bool known = false;
    for (const SettingChange& old : r.changes) known = known || old.path == c.path;
    if (!known) r.changes.push_back(c);
  }
  if (s = SaveTuneState(r); !s.ok()) {
    std::vector<std::string> said;
    const Status undo = RestoreSystem(done, &said);
    return ReportError(cmd, Status::BadInput(
                                fmt::format("{}; {}", s.message(),
                                            undo.ok() ? "nothing was changed" : undo.message())));
  }
  ForgetChanges(done);  // the state file holds them now, until `system reset`
  for (const SettingChange& c : done) {
    fmt::print("set {}: {} -> {}, since {}\n", c.path, c.before, c.after, c.why);
  }
  if (done.empty()) fmt::print("nothing to set: the machine is in the tuned state already\n");
  if (choice == PageReportingChoice::kKeep) {
    fmt::print("free page reporting: kept as it is, by --page-reporting keep\n");
  }
  // Not a setting: what tune leaves to the kernel, said beside what it set.
  fmt::print("huge pages now (read only): {}\n", DescribeHugePages(ReadHugePageState()));
  fmt::print("saved to {}{}; `loadbench system reset` restores what was there\n", TuneStatePath(),
             found ? fmt::format(" (tuned since {})", r.since) : "");
  return 0;
}

int Reset(const SystemFlags& f, const std::string& command_line) {
  const std::string cmd = "system reset";
  HeldLock machine;
  if (int code = Lock(cmd, f, command_line, &machine); code != 0) return code;
  TuneRecord r;
  bool found = false;
  if (Status s = LoadTuneState(&r, &found); !s.ok()) return ReportError(cmd, s);
  if (!found) {
    fmt::print("nothing to restore: no saved state at {} (no `loadbench system tune` since boot, "
               "or it was reset already)\n",
               TuneStatePath());
    return 0;
  }
  std::vector<std::string> said;
  const Status s = RestoreSystem(r.changes, &said);
  for (const std::string& line : said) fmt::print("restored {}\n", line);
  if (!s.ok()) {
    return ReportError(cmd, Status::IOError(fmt::format("{}; {} keeps what is left to restore",
                                                        s.message(), TuneStatePath())));
  }
  if (Status rm = RemoveTuneState(); !rm.ok()) return ReportError(cmd, rm);
  fmt::print("the machine's settings are as they were before `loadbench system tune` ({})\n",
             r.since);
  return 0;
}

// The check run and experiment make before their runs, alone: for scripts that run several
// experiments, between them, so that each says how long it waited.
int Settle(const SystemFlags& f) {
  StabilityOptions check;
  check.max_wait_s = f.settle_wait_s;
  check.on_wait = [&](double waited_s, const std::string& busy) {
    fmt::print(stderr, "loadbench system settle: waiting ({:.0f} s of at most {:.0f} s): {}\n",
               waited_s, f.settle_wait_s, busy);
  };
  // Dirty pages written back first, as before the runs: what is left after is someone writing.
  const nlohmann::ordered_json synced = SyncDirtyPages();
  if (!synced.is_null()) {
    fmt::print(stderr,
               "loadbench system settle: wrote {} of dirty pages back to disk (sync, {:.1f} s)\n",
               FormatBytes(synced["bytes"].get<uint64_t>()), synced["seconds"].get<double>());
  }
  const nlohmann::ordered_json j = CheckStability(check);
  const bool settled = j["settled"].get<bool>();
  if (f.json) {
    fmt::print("{}\n", j.dump(2));
    return settled ? 0 : 1;
  }
  const nlohmann::ordered_json& busy = j["busy"];
  auto figure = [](const nlohmann::ordered_json& v, const char* format) {
    return v.is_null() ? std::string("unknown")
                       : fmt::format(fmt::runtime(format), v.get<double>());
  };
  fmt::print("{} after {:.1f} s of waiting (at most {:.0f} s); in the last {:.1f} s other work "
             "used {} of a CPU, {} tasks were runnable besides this one, {} I/Os in flight\n",
             settled ? "quiet" : "still busy", j["waited_s"].get<double>(), f.settle_wait_s,
             j["window_s"].get<double>(), figure(busy["cpu_percent"], "{:.0f}%"),
             figure(busy["runnable"], "{:.1f}"), figure(busy["io_in_flight"], "{:.1f}"));
  for (const auto& w : j["warnings"]) fmt::print("WARNING: {}\n", w.get<std::string>());
  return settled ? 0 : 1;
}

}  // namespace

int SystemCommand(const SystemFlags& f, const std::string& command_line) {
  if (f.action == "tune") return Tune(f, command_line);
  if (f.action == "reset") return Reset(f, command_line);
  if (f.action == "settle") return Settle(f);
  return Show(f);
}

}  // namespace loadbench::cli
