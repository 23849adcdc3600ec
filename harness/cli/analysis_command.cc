// The analysis behind the front door: `loadbench report|compare|machines|gate|advise` run the
// Python modules of analysis/ from the tool's home (harness/process/home.h) with every argument
// theirs, and run and experiment end with the report of what they recorded, as `make run` does.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/launch/job.h"
#include "harness/process/home.h"
#include "harness/process/interrupt.h"
#include "harness/run/cluster_run.h"

namespace loadbench::cli {
namespace {

// Under an MPI launcher: whether this is rank 0, from the variables the launchers set (the
// report is written once, where the results are).
bool RankZero() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::strcmp(v, "0") == 0;
  }
  return true;
}

}  // namespace

const std::vector<AnalysisSubcommand>& AnalysisSubcommands() {
  static const std::vector<AnalysisSubcommand> kAll = {
      {"report",
       "A results folder's report: report.md, report.html, summary.json and figures written "
       "into it, the verdict printed (--brief: only the verdict's lines)"},
      {"compare", "Two results folders side by side, row by row (B's time over A's)"},
      {"machines", "Results folders of many machines side by side, each strategy against its own "
                   "machine's limits, with a model of a load from the probe's figures"},
      {"gate", "A results folder held to what it must show, for scripts and CI: exit 0 when it "
               "passes, 1 when it does not (loadbench gate --help)"},
      {"advise", "What to use on this machine, from a results folder's figures (loadbench "
                 "advise --help)"},
  };
  return kAll;
}

Status CheckExports(const ReportFlags& f) {
  for (size_t i = 0; i + 1 < f.exports.size(); i += 2) {
    const std::string& fmt = f.exports[i];
    if (fmt != "csv" && fmt != "md" && fmt != "json") {
      return Status::BadInput(
          fmt::format("--export {} {}: the format is csv, md or json", fmt, f.exports[i + 1]));
    }
  }
  return Status::Ok();
}

int AnalysisMain(const std::string& name, const std::vector<std::string>& args) {
  InstallInterruptHandlers();  // Ctrl-C and SIGTERM passed on to the module, not taken here
  AnalysisCommand c;
  if (Status s = MakeAnalysisCommand(name, args, &c); !s.ok()) {
    ReportError(name, s);
    return s.code() == Status::Code::kBadInput ? 2 : 127;
  }
  int code = 0;
  if (Status s = RunAnalysis(std::move(c), &code); !s.ok()) {
    ReportError(name, s);
    return 127;  // as a shell says of a command it cannot run
  }
  return code;
}

int ReportAfterRuns(const std::string& who, int code, const std::string& out_dir,
                    const ReportFlags& f) {
  const char* off = std::getenv("LOADBENCH_NO_REPORT");
  if (f.no_report || (off != nullptr && std::strcmp(off, "1") == 0) || (code != 0 && code != 1)) {
    return code;
  }
  if (LaunchedByMpi() && (!RankZero() || std::getenv(kClusterVar) != nullptr)) return code;
  std::vector<std::string> args = {out_dir, "--brief"};
  for (size_t i = 0; i + 1 < f.exports.size(); i += 2) {
    args.insert(args.end(), {"--export", f.exports[i], f.exports[i + 1]});
  }
  const std::string again = fmt::format("loadbench report {}", out_dir);
  AnalysisCommand c;
  int report = 0;
  Status s = MakeAnalysisCommand("report", args, &c);
  if (s.ok()) s = RunAnalysis(std::move(c), &report);
  if (!s.ok()) {
    fmt::print(stderr, "{}: no report: {}; the runs are recorded in {} (then: {})\n", who,
               s.message(), out_dir, again);
    return std::max(code, 1);
  }
  if (report == 0) return code;
  if (Interrupted() || report == 128 + SIGINT || report == 128 + SIGTERM) {
    fmt::print(stderr,
               "{}: the report was interrupted; the runs are recorded in {}; write it "
               "with: {}\n",
               who, out_dir, again);
    return 130;
  }
  fmt::print(stderr,
             "{}: the report failed (exit {}, above); the runs are recorded in {}; "
             "write it again with: {}\n",
             who, report, out_dir, again);
  return std::max(code, 1);
}

}  // namespace loadbench::cli
