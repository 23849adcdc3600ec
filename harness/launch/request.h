// What a worker is told: one typed request, written by one function and read back by one, as
// its reply is one RunRecord (record/record.h). The runner fills it from the plan's resolved
// point (measure/measure.cc), a launcher adds what differs between its readers (the part, the
// reader's place, the descriptors), and the worker (launch/worker.h) uses it as it is: a field
// added touches this type, the code that sets it and the code that uses it, nothing in between
// (docs/adding-a-strategy.md). It travels as one JSON argument (`loadbench worker --request`)
// and, under MPI, inside the run message rank 0 sends (launch/ranks.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/use/part.h"
#include "loaders/use/use.h"

namespace loadbench {

struct WorkerRequest {
  std::string file;                   // the model as the reader opens it
  ResolvedSpec strategy;              // resolved once, when the experiment was read
  std::vector<std::string> counters;  // libpfm4 event names, counted over the timed region
  // The checksum the model (or, with parts > 1, the part) must give, as the runner read it (the
  // one stored in the model, or the runner's reference read of a file that stores none): a
  // model that stores another is not the one the runner read, and fails. Unset: what the file
  // stores, if anything.
  std::optional<uint64_t> expect_checksum;
  // One of several readers (loaders/use/part.h): the read pattern and which part of how many
  // this worker loads.
  ReadPattern pattern;
  int part = 0, parts = 1;
  // This worker is reader `reader` of the run's `readers` (under MPI, of every rank's), which
  // its strategy finds in its environment (LOADBENCH_READER, loaders/blocks/peers.h).
  int reader = 0, readers = 1;
  int result_fd = 1;  // where the record goes, one JSON line (and the stages below)
  // When >= 0: once the load is complete the worker writes "loaded\n" to its result fd and
  // waits for a byte (or EOF) on this fd before it measures its memory; after writing its
  // record it waits for EOF before exiting. Workers loading concurrently are so measured while
  // all of them hold their memory.
  int hold_fd = -1;
  // When >= 0: the start barrier. Once set up (counters opened, a device strategy's context
  // made, perf attached and sampling when profiled), the worker writes "ready\n" to its result
  // fd and waits for a byte on this fd before its timed region starts; EOF instead (the runner
  // gave up on the run) ends it unloaded. The runner releases the readers of a run together,
  // once every one is ready.
  int start_fd = -1;
  // When >= 0: perf's control pipes (harness/profile/profile.h). The worker enables the
  // profiler before it says it is ready (start_fd), so that it never waits for perf once
  // released, and disables it at the end of its timed region, waiting for each ack.
  int profile_ctl_fd = -1, profile_ack_fd = -1;
};

nlohmann::ordered_json RequestJson(const WorkerRequest& r);
// Back from RequestJson's object: kBadInput naming the first key that is missing or wrong.
Status ReadWorkerRequest(const nlohmann::ordered_json& j, WorkerRequest* out);

}  // namespace loadbench
