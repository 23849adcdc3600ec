#include "harness/record/reporter.h"

#include <fmt/format.h>

#include "loaders/base/units.h"

namespace loadbench {
namespace {

// A profiled run's figures, saying what they are shares of: one thread's on-CPU and waiting
// time, which add up to its wall time; several threads' CPU time, which can exceed it, and
// their waiting, each thread's added up.
std::string ProfileDetail(const RunRecord& r) {
  if (!r.profile || !r.profile->is_object()) return "";
  const RunRecord::Json& p = *r.profile;
  const double on = p.value("on_cpu_s", 0.0);
  if (!p.contains("waiting_s") || !p["waiting_s"].is_number()) {
    return fmt::format(", profile: {:.3f} s on CPU", on);
  }
  const double waiting = p["waiting_s"].get<double>();
  if (p.value("shares_of", "") == "wall" && on + waiting > 0) {
    return fmt::format(", profile: {:.0f}% on CPU, {:.0f}% waiting (of the wall time)",
                       100 * on / (on + waiting), 100 * waiting / (on + waiting));
  }
  return fmt::format(
      ", profile: {} threads, {:.3f} s on CPU (shares of CPU time), {:.3f} s waiting (per "
      "thread, added up)",
      p.value("threads", 0), on, waiting);
}

// The record's warnings, each after "; warning: ".
std::string WarningsText(const RunRecord& r) {
  std::string out;
  for (const std::string& w : r.warnings) out += "; warning: " + w;
  return out;
}

// The line logged for a record.
std::string LogDetail(const RunRecord& r) {
  if (r.status != "ok") return r.error.value_or("") + WarningsText(r);
  if (IsCeilingName(r.strategy)) {
    return fmt::format("{:.3f} s, {:.3f} GB/s: the {} now", r.wall_s.value_or(0),
                       r.gb_per_s.value_or(0),
                       r.strategy == kCeiling       ? "device"
                       : r.strategy == kLinkCeiling ? "link"
                                                    : "server, the link unshaped");
  }
  // A reader of a part delivers the part's bytes, not the file's.
  const uint64_t bytes =
      r.pattern.value_or("replicated") != "replicated" ? r.tensor_bytes.value_or(0) : r.file_bytes;
  return fmt::format("{:.3f} s, {:.2f} GB/s{}, peak RSS {}{}{}{}", r.wall_s.value_or(0),
                     static_cast<double>(bytes) / r.wall_s.value_or(0) / 1e9,
                     r.procs.value_or(1) > 1 ? " per reader" : "",
                     FormatBytes(r.peak_rss_bytes.value_or(0)),
                     r.verify == "none" ? ", unverified (no checksum)" : "", ProfileDetail(r),
                     WarningsText(r));
}

// "[3/40] cold fread rep 1: ok 0.412 s, ...": which run, and how it went.
std::string LogLine(const Reporter& rep, const RunRecord& r) {
  const int procs = r.procs.value_or(1);
  const std::string pattern = r.pattern.value_or("replicated");
  return fmt::format(
      "{}[{}/{}] {} {}{} rep {}{}{}: {} {}\n", rep.clear_line ? "\r\033[K" : "", rep.done,
      rep.total, r.cache, r.strategy_spec,
      procs > 1 && pattern != "replicated" ? " " + pattern : "", r.rep,
      r.memory_limit_bytes ? fmt::format(" limit {}", FormatBytes(*r.memory_limit_bytes)) : "",
      r.proc ? fmt::format(" {} {}", r.rank ? "rank" : "proc", *r.proc) : "", r.status,
      LogDetail(r));
}

}  // namespace

std::string Reporter::RunId(size_t i) const {
  return fmt::format("{}-{:04d}", stamp, seq + 1 + static_cast<int>(i));
}

Status Reporter::Write(std::vector<RunRecord>& batch) {
  const std::string ended_at = NowUtcMs();
  for (RunRecord& r : batch) {
    r.ended_at = ended_at;
    ++seq;
    ++done;
    LB_RETURN_IF_ERROR(out->Append(RecordJson(r)));
    // Without --verbose: a run that is not ok or warns; an unsupported strategy once, not every
    // round.
    const bool said = r.status == "unsupported" && !said_unsupported.insert(r.strategy_spec).second;
    const bool tell = (r.status != "ok" || !r.warnings.empty()) && !said;
    if (log || tell) fmt::print(stderr, "{}", LogLine(*this, r));
    records.push_back(std::move(r));
  }
  // An unsupported run did nothing to the machine: the next run's predecessor is the one before.
  if (!records.empty() && records.back().status != "unsupported") {
    previous = records.back().strategy_spec;
  }
  return Status::Ok();
}

}  // namespace loadbench
