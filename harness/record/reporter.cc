#include "harness/record/reporter.h"

#include <fmt/format.h>

#include "loaders/base/units.h"

namespace loadbench {
namespace {

// The record's warnings, each after "; warning: ".
std::string WarningsText(const RunRecord& r) {
  std::string out;
  for (const std::string& w : r.warnings) out += "; warning: " + w;
  return out;
}

// The line logged for a record.
std::string LogDetail(const RunRecord& r) {
  if (r.status != "ok") return r.error.value_or("") + WarningsText(r);
  if (r.strategy == kCeiling) {
    return fmt::format("{:.3f} s, {:.2f} GB/s: the device now", r.wall_s.value_or(0),
                       r.gb_per_s.value_or(0));
  }
  // A reader of a part delivers the part's bytes, not the file's.
  const uint64_t bytes =
      r.pattern.value_or("replicated") != "replicated" ? r.tensor_bytes.value_or(0) : r.file_bytes;
  return fmt::format("{:.3f} s, {:.2f} GB/s, peak RSS {}{}{}", r.wall_s.value_or(0),
                     static_cast<double>(bytes) / r.wall_s.value_or(0) / 1e9,
                     FormatBytes(r.peak_rss_bytes.value_or(0)),
                     r.verify == "none" ? ", unverified (no checksum)" : "", WarningsText(r));
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
