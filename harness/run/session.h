// What every measured run of a command shares: a file made ready for runs (its tensor table and
// reference checksum), a run as planned (RunPoint), and the session the runs are recorded in.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/ranks/job.h"
#include "harness/run/record.h"
#include "harness/run/results.h"
#include "harness/system/cache.h"
#include "loaders/base/status.h"
#include "loaders/format/format.h"
#include "loaders/loader.h"

namespace loadbench {

// A file ready for runs.
struct PreparedFile {
  std::string path;  // absolute
  TensorTable table;  // expected_checksum always set once prepared
  std::string checksum_source;
  // The checksum of each reader's part under a read pattern (harness/ranks/part.h), by
  // PartsKey; replicated readers check the model's.
  std::map<std::string, std::vector<uint64_t>> part_checksums;
};

// "tp/4": the key of part_checksums for `readers` readers by `pattern`.
std::string PartsKey(const std::string& pattern, int readers);

// Computes part_checksums[PartsKey(pattern, readers)] of `f` once: kBadInput naming the file
// when the pattern cannot split it among that many readers.
Status PrepareParts(const std::string& pattern, int readers, PreparedFile* f);

// Reads and checks the file's table, checks that its residency can be measured (every run
// checks its cache state), and, for a file that stores no checksum, reads it once with plain
// preads for the reference every run must match. `who` prefixes the note printed before that
// read ("loadbench run"). Bad input is kBadInput, nothing written.
Status PrepareFile(const std::string& path, const std::string& who, PreparedFile* out);

// env.json's description of a prepared file.
nlohmann::ordered_json FileEnv(const PreparedFile& f);

// env.json's fields on how runs were measured: cache control, counters, timelines, probe.
void AddMeasurementEnv(const std::string& file, const std::vector<std::string>& counters,
                       double sample_ms, nlohmann::ordered_json* env);

// The strategy name of a ceiling run: in a round of a cold condition, a raw sequential read
// of the same file, O_DIRECT through io_uring at depth 32 (the probe's cold direct read), so
// that every strategy's time can also be read as a fraction of the device's speed at that
// moment. Not a strategy: analyses keep its records apart.
inline constexpr const char* kCeiling = "ceiling";
StrategySpec CeilingRunSpec();

// One run as planned: a strategy point (or the ceiling), a cache state, a repetition, and how
// it is run.
struct RunPoint {
  StrategySpec spec;
  std::string cache;  // "cold" or "warm"
  int rep = 0;        // the round
  int position = -1;  // place in its round from 0; -1: not run in rounds
  int procs = 1;              // readers loading the model at the same time
  std::string pattern = "replicated";  // what each reader loads (harness/ranks/part.h)
  uint64_t memory_limit = 0;  // bytes; 0: no memory cgroup
  std::string unsupported;    // a reason known before the run (unknown strategy, bad option)
  std::optional<ExecCommand> exec;  // an exec strategy's command
};

// The run `r` of experiment `e` as a point to measure (the ceiling for strategy index
// e.strategies.size()).
RunPoint PointOf(const Experiment& e, const ExperimentRun& r);

// A file's path as runs.jsonl records it (absolute, links resolved), for a file that may not
// exist yet.
std::string RecordedPath(const std::string& path);

// The identity of a run for resuming: file, strategy spec, cache, repetition, procs, memory
// limit and read pattern, from a point or from a record of runs.jsonl.
std::string RunKey(const std::string& file, const RunPoint& p);
std::string RunKey(const nlohmann::ordered_json& record);

// What the runs of a command share, and where their records go.
struct RunSession {
  std::string experiment;
  std::string out_dir;
  std::string exe;  // the loadbench binary the workers run
  std::vector<std::string> counters;
  double sample_ms = 10;
  double timeout_s = 0;
  // Profiles (harness/run/profile.h): 0 for none; else the rate, and perf's path or why no
  // profile can be taken here (every record then says so).
  int profile_hz = 0;
  std::string perf, profile_unavailable;
  bool root = false;
  std::string stamp;  // run ids are <stamp>-<sequence>
  int total = 0;      // runs planned (records, one per worker), for the progress lines
  int done = 0;       // of those, recorded (including runs recorded before a resume)
  bool log = true;    // print a line per record on stderr (else only for records not ok, and
                      // for an unsupported strategy only its first)
  std::set<std::string> said_unsupported;  // specs whose unsupported record was printed
  bool clear_line = false;  // erase a progress line on the terminal before each
  JsonlWriter* out = nullptr;
  const Job* job = nullptr;  // under MPI: the job whose ranks load (harness/ranks/job.h)
  std::vector<RunRecord> records;  // appended by this session
  std::string previous;            // the spec of the session's last run that ran
  int seq = 0;
};

// Starts a session: SIGINT/SIGTERM handlers, no SIGPIPE, the binary, root or not, the stamp.
void StartSession(RunSession* rs);

// Removes what strategies leave behind (a shared segment) for `file`, reporting failures.
void CleanupStrategies(const std::vector<StrategySpec>& specs, const std::string& file,
                       const std::string& who);

// The number of records that are failed or invalid.
int CountBad(const std::vector<RunRecord>& records);

std::string NowStamp(const char* strftime_format);
// The UTC time now to the millisecond: "YYYY-MM-DDTHH:MM:SS.mmmZ".
std::string NowUtcMs();

}  // namespace loadbench
