#include "harness/run/dry_run.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "harness/experiment/estimate.h"
#include "harness/gen/generator.h"
#include "harness/probe/probe.h"
#include "harness/process/cgroup.h"
#include "harness/record/results.h"
#include "harness/run/progress.h"
#include "harness/run/session.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

uint64_t FreeBytes(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return 0;
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

// The nearest existing folder at or above `path`: where a file to be written will go.
std::string ExistingDirOf(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = fs::absolute(path);
  std::error_code ec;
  while (!p.empty() && !fs::is_directory(p, ec)) p = p.parent_path();
  return p.empty() ? "/" : p.string();
}

// A generated file the data folder already holds at its planned size (gen itself checks that
// the spec matches before it reuses one).
bool Present(const ExperimentFile& f) {
  auto has = [](const std::string& path, uint64_t bytes) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == bytes;
  };
  GenPlan plan;
  if (!PlanGenerated(f.gen, &plan).ok() || plan.shards.empty()) return has(f.path, f.file_bytes);
  // A sharded model: every shard at its planned size, and the index where there is one.
  for (const GenShard& s : plan.shards) {
    if (!has(s.path, s.layout.file_size)) return false;
  }
  return plan.index_path.empty() || has(plan.index_path, plan.index_bytes);
}

std::string RepsText(const Experiment& e) {
  if (!e.auto_reps) return std::to_string(e.reps);
  const AutoReps& a = e.autoreps;
  return fmt::format("auto (until every paired ratio with the baseline is known within ±{:.0f}%, "
                     "{} to {} rounds{})",
                     a.target * 100, a.min_rounds, a.max_rounds,
                     a.budget_s > 0 ? ", budget " + DurationText(a.budget_s) : "");
}

// What a plan needs: the size of each file, what is left to write, and how long that takes.
struct Needs {
  std::vector<uint64_t> bytes;  // per file
  uint64_t to_write = 0;
  double gen_s = 0;
};

Needs PrintFiles(const Experiment& e, const std::optional<Ceilings>& ceilings) {
  Needs n;
  n.bytes.assign(e.files.size(), 0);
  fmt::print("files ({}):\n", e.files.size());
  for (size_t i = 0; i < e.files.size(); ++i) {
    const ExperimentFile& f = e.files[i];
    if (f.generate) {
      const bool present = Present(f);
      n.bytes[i] = f.file_bytes;
      if (!present) {
        n.to_write += f.file_bytes;
        if (ceilings) n.gen_s += f.file_bytes / (ceilings->write_gbps * 1e9);
      }
      fmt::print("  {}  {}, {} {} {} seed {}{}: {}\n", f.path, FormatBytes(f.file_bytes),
                 f.gen.preset, f.gen.format, f.gen.dtype, f.gen.seed,
                 f.gen.align ? fmt::format(" align {}", f.gen.align) : "",
                 present ? "present, reused" : "to generate");
      continue;
    }
    struct stat st {};
    const bool exists = ::stat(f.path.c_str(), &st) == 0;
    n.bytes[i] = exists ? static_cast<uint64_t>(st.st_size) : 0;
    fmt::print("  {}  {}\n", f.path,
               exists ? FormatBytes(n.bytes[i]) + ", given" : "MISSING: the run would stop here");
  }
  return n;
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<std::string> PatternTexts(const std::vector<ReadPattern>& patterns) {
  std::vector<std::string> out;
  for (const ReadPattern& p : patterns) out.push_back(p.Text());
  return out;
}

void PrintSettings(const Experiment& e) {
  fmt::print("strategies ({} points):\n", e.strategies.size());
  for (const auto& s : e.strategies) {
    fmt::print("  {}{}\n", s.spec.text,
               s.unsupported.empty() ? "" : "  (unsupported: " + s.unsupported + ")");
  }
  std::vector<std::string> limits, procs;
  for (uint64_t l : e.memory_limits) limits.push_back(l ? FormatBytes(l) : "none");
  for (int p : e.procs) procs.push_back(std::to_string(p));
  fmt::print("cache: {}; reps: {}; procs: {}{}; memory limit: {}; order: {}; timeout: {}\n",
             Joined(e.caches), RepsText(e), Joined(procs),
             e.patterns == std::vector<ReadPattern>{ReadPattern()}
                 ? ""
                 : fmt::format(" (pattern {})", Joined(PatternTexts(e.patterns))),
             Joined(limits),
             e.order == RoundOrder::kShuffled || e.order == RoundOrder::kBalanced
                 ? fmt::format("{} (seed {})", RoundOrderName(e.order), e.seed)
                 : RoundOrderName(e.order),
             e.timeout_s > 0 ? DurationText(e.timeout_s) : "none");
  fmt::print("baseline: {} (paired ratios in every round are against it); ceiling: {}\n",
             e.baseline, e.ceiling ? "a device read in every round of a cold condition" : "no");
  if (!e.link.rates.empty()) {
    fmt::print("link: the server behind a veth pair shaped to {}{}; every round measures the "
               "link (iperf3, {} s) and the server's own limit beside the strategies\n",
               Joined(e.link.rates), e.link.delay.empty() ? "" : ", delay " + e.link.delay,
               e.link.seconds);
  }
  if (!e.storages.empty()) {
    fmt::print("storages ({}), one after another, each made (the model copied in, its own probe "
               "taken), its rounds run on it, then removed (needs root but for here):\n",
               e.storages.size());
    for (const ExperimentStorage& st : e.storages) {
      const std::string why = st.spec.made() ? StorageUnavailable(st.spec, 0) : "";
      fmt::print("  {}{}\n", st.spec.label,
                 why.empty() ? "" : " (cannot be made here: " + why + ")");
    }
  }
  if (e.cluster.on()) {
    const int most = *std::max_element(e.cluster.nodes.begin(), e.cluster.nodes.end());
    fmt::print("cluster: {} nodes (network namespaces), each NIC {}, the server behind an "
               "uplink of {}; each link measured both ways first (iperf3, {} s each), then "
               "mpirun starts one rank per node (needs root and OpenMPI)\n",
               most, e.cluster.nic, e.cluster.uplink, e.cluster.seconds);
  }
  if (e.profile) {
    fmt::print("profile: every load sampled by perf at {} Hz (profiles/RUN_ID.folded)\n",
               e.profile_hz);
  }
  if (e.system.tune) {
    fmt::print("machine: tuned before the first run{} and restored at the end (free page "
               "reporting {}; `loadbench system show` shows what would change)\n",
               e.system.tune_auto ? " where this machine lets it" : "",
               e.system.page_reporting == PageReportingChoice::kOff ? "held off" : "kept");
  }
  const bool any_limit =
      std::any_of(e.memory_limits.begin(), e.memory_limits.end(), [](uint64_t l) { return l > 0; });
  if (const std::string cg = MemoryCgroupUnsupportedReason(); any_limit && !cg.empty()) {
    fmt::print("memory limits: unsupported here ({}); those runs will say so\n", cg);
  }
}

// The runs left to make and an estimate of their time.
void PrintRuns(const Experiment& e, const std::string& out_dir, const Needs& n,
               const std::optional<Ceilings>& ceilings, double* run_s) {
  std::set<std::string> recorded;
  for (const Json& r : ReadRecords(out_dir + "/runs.jsonl")) {
    if (r.value("experiment", "") == e.name) recorded.insert(RunKey(r));
  }
  size_t todo = 0, records = 0;
  for (const ExperimentRun& r : e.runs) {
    const RunPoint p = PointOf(e, r);
    if (recorded.count(RunKey(RecordedPath(e.files[r.file].path), p))) continue;
    ++todo;
    records += IsCeilingName(p.spec.name) ? 1 : static_cast<size_t>(r.procs);
    if (ceilings && p.unsupported.empty()) {
      double t = EstimateRunSeconds(*ceilings, n.bytes[r.file], p.spec, p.cache, p.procs);
      t = EstimateOnLink(e, r, n.bytes[r.file], t);
      *run_s += e.timeout_s > 0 ? std::min(t, e.timeout_s) : t;
    }
  }
  fmt::print("runs: {} planned{}", e.runs.size(), e.auto_reps ? " (at most)" : "");
  if (todo != e.runs.size()) {
    fmt::print(", {} already recorded in {}", e.runs.size() - todo, out_dir);
  }
  fmt::print(", {} to run ({} records)\n", todo, records);
}

}  // namespace

int PrintPlan(const Experiment& e, const std::string& data_dir, const std::string& out_dir) {
  fmt::print("experiment: {} ({})\n", e.name, e.path);
  if (!e.question.empty()) fmt::print("question: {}\n", e.question);
  std::string why;
  std::optional<Ceilings> ceilings;
  std::optional<Json> probe = CachedProbe(data_dir, &why);
  if (probe) ceilings = CeilingsOf(*probe);
  if (probe && !ceilings) why = "the cached probe lacks the device figures";
  const Needs n = PrintFiles(e, ceilings);
  PrintSettings(e);
  double run_s = 0;
  PrintRuns(e, out_dir, n, ceilings, &run_s);
  const uint64_t free_bytes = FreeBytes(ExistingDirOf(data_dir));
  fmt::print("disk: {} to generate in {}, {} free there{}\n", FormatBytes(n.to_write), data_dir,
             FormatBytes(free_bytes),
             n.to_write > free_bytes ? "  NOT ENOUGH: generation would stop" : "");
  if (ceilings) {
    fmt::print("time: about {} (generation {}, runs {}), a rough estimate from the probe of "
               "{}\n",
               DurationText(n.gen_s + run_s), DurationText(n.gen_s), DurationText(run_s),
               probe->value("time_utc", "?"));
  } else {
    fmt::print("time: no estimate ({}); run `loadbench probe` first\n", why);
  }
  fmt::print("results: {}\n", out_dir);
  return 0;
}

}  // namespace loadbench
