// Timelines: the runner samples a worker from outside while it loads (RSS by kind, how much of
// the file is in the page cache, bytes read, faults), so that a run shows not only how long it
// took but how its memory and I/O grew. Only cheap /proc files are read (status, io, stat:
// none of them takes the worker's mmap lock), so the sampling does not slow the load it watches.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

struct TimelineSample {
  double mono_s = 0;  // CLOCK_MONOTONIC, the clock the worker's steady_clock reads
  uint64_t rss_bytes = 0, rss_anon_bytes = 0, rss_file_bytes = 0, rss_shmem_bytes = 0;
  std::optional<uint64_t> file_cached_bytes;        // null where residency cannot be measured
  std::optional<uint64_t> read_bytes, rchar_bytes;  // null where /proc/PID/io is not readable
  uint64_t minor_faults = 0, major_faults = 0;
};

// Samples one process. Sample() returns false (and records nothing) once the process has exited
// or become a zombie, whose /proc files no longer describe a load.
class TimelineSampler {
 public:
  // `files`: the model's files, whose page-cache residency is summed.
  TimelineSampler(pid_t pid, std::vector<std::string> files)
      : pid_(pid), files_(std::move(files)) {}
  bool Sample();
  const std::vector<TimelineSample>& samples() const { return samples_; }

 private:
  pid_t pid_;
  std::vector<std::string> files_;
  std::vector<TimelineSample> samples_;
};

// When to sample: a runner watching processes polls their pipes and, between polls, takes a
// sample every `interval_s` (0: never).
class SamplePacer {
 public:
  explicit SamplePacer(double interval_s)
      : interval_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(interval_s))),
        next_(std::chrono::steady_clock::now()) {}
  // Whether a sample is due now; when it is, the next one is set an interval later.
  bool Due();
  // The poll's wait in ms until the next sample, at most `max_ms` (`max_ms` when never).
  int WaitMs(int max_ms) const;

 private:
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point next_;
};

// Samples one process on a thread of its own, at once and then every `interval_s` (above 0),
// until the
// process has exited or Stop is called: whoever watches the process for its exit never waits
// for a sample in progress.
class SamplingThread {
 public:
  SamplingThread(pid_t pid, std::vector<std::string> files, double interval_s);
  ~SamplingThread() { Stop(); }
  SamplingThread(const SamplingThread&) = delete;
  SamplingThread& operator=(const SamplingThread&) = delete;
  // Ends the sampling after the sample in progress; the samples taken.
  const std::vector<TimelineSample>& Stop();

 private:
  void Loop();

  TimelineSampler sampler_;
  std::chrono::steady_clock::duration interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Writes `samples` as CSV with time relative to `zero_mono_s` (the worker's load start: rows
// before it, with negative t_s, are the worker starting up). Columns: t_s, rss_bytes,
// rss_anon_bytes, rss_file_bytes, rss_shmem_bytes, file_cached_bytes, read_bytes, rchar_bytes,
// minor_faults, major_faults; an unknown value is an empty field.
// A write that fails removes the file and is kNotWritten.
Status WriteTimelineCsv(const std::string& path, const std::vector<TimelineSample>& samples,
                        double zero_mono_s);

// The current CLOCK_MONOTONIC time in seconds.
double MonotonicNow();

}  // namespace loadbench
