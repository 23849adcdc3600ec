// A reader's record completed, the same for every launcher: the identity the runner gave the
// run and what the reader reported (or why it left nothing); then, for a reader in a process of
// its own (all but a ceiling's read), its process's usage and its host's state before and
// after, and the judgement: failed when the reader was, by the OOM killer when it was its work;
// invalid when the run did not start from the cache state it promised, when a warm run read from
// storage (the runner's own readers only), or when a cold run read too little of the model from
// storage to have loaded it (commands only).
#pragma once

#include <cstddef>
#include <vector>

#include "harness/experiment/point.h"
#include "harness/launch/launcher.h"
#include "harness/record/record.h"
#include "loaders/strategy/registry.h"

namespace loadbench {

// What the judging of a run's records needs beside each outcome.
struct Judging {
  const RunPoint* point = nullptr;
  const StrategyInfo* info = nullptr;  // null for an exec command
  bool check_warm_reads = true;
  bool check_cold_reads = false;
  // A ceiling's read in this process (launch/ceiling.h): its record is what it reported under
  // the run's identity, with nothing of what is measured around readers.
  bool in_process = false;
};

// Reader k's record from `base` (the run's identity) and its outcome.
RunRecord Complete(const RunRecord& base, const Judging& j, size_t k, ReaderOutcome& o);

// A cold run of several readers whose reads are their own word (commands: Judging's
// check_cold_reads), once all are completed: the readers of each host share its page cache, so
// they are judged together, invalid when all of them read less than most of what they need
// from storage (each part once, the model once however many read it whole).
void CheckColdReadsTogether(const RunPoint& p, std::vector<RunRecord>* run);

// The records of one run of several readers, once all are completed: each gets the run's start
// spread (start_spread_s), the latest load_start_unix_s minus the earliest, when at least two
// readers started their clocks.
void SetStartSpread(std::vector<RunRecord>* run);

}  // namespace loadbench
