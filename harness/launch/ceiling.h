// The ceiling launcher (launch/launcher.h): a ceiling run's one read, in this process, beside
// the strategies' runs of a round: the device's limit (harness/measure/ceiling.h), the link's
// and the server's (harness/run/link_runs.h; record/record.h names all three). A ceiling is not
// a load: its read makes its own start state (the device's recipes each drop the cache before
// they read, the server's fetch reads the files warm at the server, iperf3 needs none) and
// reports every figure itself, so it calls no host step and nothing is measured around it. One
// read stands for a run of several readers, and gives its one record.
#pragma once

#include <memory>

#include "harness/launch/launcher.h"
#include "harness/record/record.h"

namespace loadbench {

// A ceiling's read.
class CeilingRead {
 public:
  virtual ~CeilingRead() = default;
  // Reads for the run `req` (its files, its readers, its link) and fills `r`: status, error,
  // params and the ceiling's figures (gb_per_s, wall_s, ceiling_bytes, details). It stops once
  // the command is interrupted (process/interrupt.h), and what it filled then means nothing.
  virtual void Read(const LaunchRequest& req, RunRecord* r) = 0;
};

// The launcher of `read`, which must outlive it.
std::unique_ptr<Launcher> CeilingLauncher(CeilingRead& read);

}  // namespace loadbench
