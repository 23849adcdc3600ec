// One measured run, the same sequence for every kind of reader: its identity; the launcher that
// starts its readers (launch/launcher.h: workers on this machine, an exec command, the ranks of
// an MPI job, a ceiling's read in this process); the host prepared before them and measured
// after (measure/host.h), and the server's and the link's meters read around them; each
// reader's record completed and judged (measure/complete.h); timelines and profiles written
// beside the results; the records appended and logged (record/reporter.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/experiment/file.h"
#include "harness/experiment/point.h"
#include "harness/launch/ceiling.h"
#include "harness/launch/job.h"
#include "harness/record/reporter.h"
#include "harness/storage/storage.h"
#include "loaders/base/status.h"

namespace loadbench {

// What the runner meters outside the readers, beside their host: the experiment's server's CPU
// seconds so far (its processes' user and system time), the s3fs mount's the readers of
// via=s3fs read through (the client's side, not the server's), and the bytes the link's client
// end has received (harness/net/link.h); each unset where the experiment has none.
struct MeterReading {
  std::optional<double> server_cpu_s, mount_cpu_s;
  std::optional<uint64_t> link_rx_bytes;
};

// The meters of an experiment's server, its mount and its link (harness/run/executor.cc).
class Meters {
 public:
  virtual ~Meters() = default;
  virtual MeterReading Read() const = 0;
};

// How a command's runs are measured.
struct MeasureSettings {
  std::string experiment;
  std::string out_dir;  // the results folder: timelines/ and profiles/ go in it
  std::string exe;      // the loadbench binary the workers run
  std::vector<std::string> counters;
  double sample_ms = 10;  // the timeline's interval; 0: none
  double timeout_s = 0;   // a run's limit; 0: none
  // Profiles (harness/profile/profile.h): 0 for none; else the rate, and perf's path or why no
  // profile can be taken here (every record then says so).
  int profile_hz = 0;
  std::string perf, profile_unavailable;
  const Job* job = nullptr;  // under MPI: the job whose ranks load (launch/job.h)
  bool cluster = false;  // the readers are a [cluster]'s nodes: each record gets `nodes`, `nic`,
                         // `uplink` and `session`
  int session = 0;       // this session's index in env.json `sessions`
  // The endpoint of the experiment's own s3rver, which the readers are pointed at; "" for none.
  std::string s3rver;
  // The ceilings' reads by their strategy names (record/record.h): the device's
  // (measure/ceiling.h), and on a link its own and the server's (harness/run/link_runs.h); a
  // run of one of these names is that read, in this process (launch/ceiling.h).
  std::map<std::string, CeilingRead*> ceilings;
  // Read around every run's readers, from the end of the host's preparation (a warm start's
  // read through the server is not the run's) to their end: a run's records get what moved (the
  // server's whole work, every reader's). Null without a server.
  const Meters* meters = nullptr;
  // The storage the runs' model sits on, when the tool made it (harness/storage/storage.h):
  // its device's counters read around every run's readers (and a ceiling's read). Null else.
  const Storage* storage = nullptr;
};

// One run of `p` on `file`: one record per reader (a ceiling: one), written by `out`. Interrupted
// (*interrupted set), it writes no record. Fails only when a record, a timeline or a profile
// cannot be written.
Status MeasureRun(const MeasureSettings& s, Reporter& out, const PreparedFile& file,
                  const RunPoint& p, bool* interrupted);

}  // namespace loadbench
