#include "harness/machine/timeline.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "harness/cache/cache.h"

namespace loadbench {
namespace {

std::optional<std::string> Slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The integer after "key:" at the start of a line of a /proc text file's contents.
std::optional<uint64_t> Field(const std::string& text, const std::string& key) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, key.size(), key) == 0 && pos + key.size() < text.size() &&
        text[pos + key.size()] == ':') {
      const char* v = text.c_str() + pos + key.size() + 1;
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (end == v) return std::nullopt;
      return n;
    }
    pos = text.find('\n', pos);
    if (pos == std::string::npos) break;
    ++pos;
  }
  return std::nullopt;
}

std::string Opt(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : ""; }

}  // namespace

bool SamplePacer::Due() {
  if (interval_.count() <= 0 || std::chrono::steady_clock::now() < next_) return false;
  next_ += interval_;
  return true;
}

int SamplePacer::WaitMs(int max_ms) const {
  if (interval_.count() <= 0) return max_ms;
  const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(
      next_ - std::chrono::steady_clock::now());
  return std::clamp(static_cast<int>(until.count()), 0, max_ms);
}

double MonotonicNow() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

bool TimelineSampler::Sample() {
  const std::string base = fmt::format("/proc/{}/", pid_);
  TimelineSample s;
  s.mono_s = MonotonicNow();
  const auto stat = Slurp(base + "stat");
  if (!stat) return false;
  // Fields after the command name, which may itself hold spaces and parentheses.
  const size_t paren = stat->rfind(')');
  if (paren == std::string::npos) return false;
  std::istringstream fields(stat->substr(paren + 1));
  std::string state;
  uint64_t skip = 0;
  fields >> state;
  if (state == "Z" || state == "X") return false;
  for (int i = 0; i < 5; ++i) fields >> skip;                  // ppid pgrp session tty_nr tpgid
  fields >> skip >> s.minor_faults >> skip >> s.major_faults;  // flags minflt cminflt majflt
  if (!fields) return false;

  const auto status = Slurp(base + "status");
  if (!status) return false;
  const auto rss = Field(*status, "VmRSS");
  if (!rss) return false;  // a kernel thread or an exiting process: no memory to describe
  s.rss_bytes = *rss * 1024;
  s.rss_anon_bytes = Field(*status, "RssAnon").value_or(0) * 1024;
  s.rss_file_bytes = Field(*status, "RssFile").value_or(0) * 1024;
  s.rss_shmem_bytes = Field(*status, "RssShmem").value_or(0) * 1024;

  if (const auto io = Slurp(base + "io")) {
    s.read_bytes = Field(*io, "read_bytes");
    s.rchar_bytes = Field(*io, "rchar");
  }
  uint64_t pages = 0;
  bool measured = true;
  for (const std::string& f : files_) {
    Residency r;
    measured = measured && MeasureResidency(f, &r).ok();
    pages += r.resident_pages;
  }
  if (measured) s.file_cached_bytes = pages * 4096;
  samples_.push_back(s);
  return true;
}

SamplingThread::SamplingThread(pid_t pid, std::vector<std::string> files, double interval_s)
    : sampler_(pid, std::move(files)),
      interval_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(interval_s))),
      thread_([this] { Loop(); }) {}

void SamplingThread::Loop() {
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    const bool alive = sampler_.Sample();
    lock.lock();
    if (!alive) return;
    next += interval_;
    wake_.wait_until(lock, next, [this] { return stop_; });
  }
}

const std::vector<TimelineSample>& SamplingThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return sampler_.samples();
}

Status WriteTimelineCsv(const std::string& path, const std::vector<TimelineSample>& samples,
                        double zero_mono_s) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    const int err = errno;
    const Status s = Status::FromErrno(path, err);
    return err == ENOSPC || err == EDQUOT || err == EIO ? Status::NotWritten(s.message()) : s;
  }
  std::string text =
      "t_s,rss_bytes,rss_anon_bytes,rss_file_bytes,rss_shmem_bytes,file_cached_bytes,"
      "read_bytes,rchar_bytes,minor_faults,major_faults\n";
  for (const auto& s : samples) {
    text +=
        fmt::format("{:.6f},{},{},{},{},{},{},{},{},{}\n", s.mono_s - zero_mono_s, s.rss_bytes,
                    s.rss_anon_bytes, s.rss_file_bytes, s.rss_shmem_bytes, Opt(s.file_cached_bytes),
                    Opt(s.read_bytes), Opt(s.rchar_bytes), s.minor_faults, s.major_faults);
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (ok && closed) return Status::Ok();
  const Status s = Status::FromErrno(path, ok ? errno : err);
  ::unlink(path.c_str());  // no half a timeline
  return Status::NotWritten(s.message());
}

}  // namespace loadbench
