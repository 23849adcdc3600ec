// The reporter: where a command's records go. It gives each run its ids, appends its records to
// runs.jsonl (each made durable before the next run starts), logs a line for each on stderr
// (with --verbose, or when a run is not ok), and keeps them for the summary.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "harness/record/record.h"
#include "harness/record/results.h"
#include "loaders/base/status.h"

namespace loadbench {

struct Reporter {
  JsonlWriter* out = nullptr;
  std::string stamp;        // run ids are <stamp>-<sequence>
  int seq = 0;              // the last sequence number given
  int total = 0;            // runs planned (records, one per reader), for the progress lines
  int done = 0;             // of those, recorded (including runs recorded before a resume)
  bool log = true;          // a line per record on stderr (else only for records not ok, and for an
                            // unsupported strategy only its first)
  bool clear_line = false;  // erase a progress line on the terminal before each
  std::set<std::string> said_unsupported;  // specs whose unsupported record was printed
  std::vector<RunRecord> records;          // appended by this command
  std::string previous;                    // the spec of the last run that ran

  // The run id of the `i`th record of the next run: <stamp>-<sequence>.
  std::string RunId(size_t i) const;
  // Appends the records of one run, stamped with its end, and logs them; kNotWritten when the
  // results cannot take them.
  Status Write(std::vector<RunRecord>& batch);
};

}  // namespace loadbench
