// The paired comparison of every strategy with the baseline, from run records: per condition
// (file, cache, procs, memory limit), the within-round ratios of a strategy's time over the
// baseline's, and their signed-rank interval (harness/stats/paired_stats.h). What adaptive
// rounds stop on, and what the summary's paired lines say.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench {

// A condition: runs of it are comparable with each other (file, cache, procs, memory limit,
// pattern, link, storage).
using Condition =
    std::tuple<std::string, std::string, int, uint64_t, std::string, std::string, std::string>;
Condition ConditionOf(const nlohmann::ordered_json& record);
// "cold", "warm x2 procs limit 512 MiB", with the file's name when `with_file`.
std::string ConditionText(const Condition& c, bool with_file);

bool IsOk(const nlohmann::ordered_json& record);
// What marks a run's figures wherever they are ranked or paired, "" for none: "unverified"
// (an exec command that sent no checksum), and for an exec command which region its time is:
// "whole command" (exec to exit: interpreter, imports and the program's own start-up) or "own
// region" (the command's ready-to-done), never the load alone as a worker's is.
std::string RowMarks(const nlohmann::ordered_json& record);
double WallOf(const nlohmann::ordered_json& record);  // 0 when there is none

// One run of a strategy: its readers' records, by reader (`proc`; 0 for a single reader), and
// how many readers it had (`procs`).
struct RunReaders {
  int readers = 1;
  std::map<int, const nlohmann::ordered_json*> by_reader;
};

// A run's time, or why it has none. It counts only whole: every reader has a record, ok, with
// a time. Its duration runs from the first reader's start to the last one's end where every
// reader recorded its start (load_start_unix_s; start_spread: the latest start less the
// first), else it is the largest wall_s.
struct RunTime {
  std::optional<double> duration, start_spread;
  std::string why;  // "reader 2 (host b, rank 2): failed: ...", when it has no duration
};
RunTime TimeOfRun(const RunReaders& run);

// A run's role ("creator", "attacher": the readers of shm), from its details; "" for none.
std::string RoleOf(const nlohmann::ordered_json& record);

// What is paired: a strategy spec and a role of its readers ("" for a run without roles).
using Series = std::pair<std::string, std::string>;
// Per condition, per series, per round: the time of the run's readers of that role (from the
// first one's start to the last one's end, as TimeOfRun), from the records made in rounds
// (those with a position; ceiling reads aside); a run that is not whole has none, in any role.
// The analysis pairs the same way (analysis/paired.py run_values).
using Rounds = std::map<Condition, std::map<Series, std::map<int, double>>>;
Rounds RoundsOf(const std::vector<nlohmann::ordered_json>& records);

// The runs of several readers made in rounds that have no time because some reader failed,
// timed out or left no record: "cold x4 procs tp fread round 3: reader 2: failed: timed out", one a
// line.
std::vector<std::string> BrokenRuns(const std::vector<nlohmann::ordered_json>& records,
                                    bool with_file);

// One strategy against the baseline in one condition (file, cache, procs, memory limit), over
// the rounds where both have an ok run. ratio: the strategy's time over the baseline's.
struct Comparison {
  std::string file, cache;
  int procs = 1;
  uint64_t memory_limit_bytes = 0;
  std::string pattern = "replicated";
  std::string link;                  // "" off a link
  std::string storage;               // "" without a [[storage]]
  std::string spec, role, baseline;  // role: "" for a run without roles
  std::string marks;  // what a reader must know to read the ratio: RowMarks of the spec's runs
  int n = 0;
  double ratio = 0, low = 0, high = 0;  // low/high: 0 and +inf when unbounded
  double level = 0;                     // the interval's two-sided level; 0 when unbounded
  double half_width = 0;                // relative; +inf when unbounded
  bool met = false;                     // half_width <= target
  bool significant = false;
};

// The spec with its marks and role, as the summary's rows name it: "torch_load (unverified)",
// "shm[attacher]".
std::string MarkedSpec(const Comparison& c);

struct RoundsVerdict {
  int rounds = 0;    // the most rounds any condition has
  bool met = false;  // every comparison met the target (false when there is none)
  std::vector<Comparison> comparisons;
};

// Compares every strategy with `baseline` (a strategy spec text) in every condition of
// `records` (runs.jsonl objects; ceilings and other experiments' strategies aside).
RoundsVerdict CompareWithBaseline(const std::vector<nlohmann::ordered_json>& records,
                                  const std::string& baseline, double target);

}  // namespace loadbench
