// An exec run's record from what the runner saw of its command, and the LOADBENCH_FD lines it
// wrote.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "harness/experiment/command.h"
#include "harness/launch/command.h"

namespace loadbench {
namespace {

// A protocol number: finite and not negative.
bool ParseSeconds(const std::string& text, double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !(v >= 0) || v > 1e9) return false;
  *out = v;
  return true;
}

// What the record says about how memory, CPU, faults and bytes read were measured.
std::string MeasuredText(const ExecMeasured& how) {
  const std::string tree =
      "CPU time, faults and bytes read: the command and every descendant it waited for (wait4, "
      "and its /proc/PID/io once exited); peak_rss_bytes: the largest of those processes";
  if (!how.cgroup.empty()) {
    return fmt::format("{}; memory.cgroup_peak_bytes: every process it started ({} memory "
                       "group, page cache it caused included)",
                       tree, how.cgroup);
  }
  return fmt::format("{}; no whole-tree memory figure: {}", tree, how.no_cgroup);
}

// The checksum line judged: verify, checksum, checksum_ok, and the mismatch as the error.
void JudgeChecksum(const ExecReport& rep, std::optional<uint64_t> expected, RunRecord* r) {
  if (!rep.checksum) {
    r->verify = "none";
    return;
  }
  r->verify = "checksum";
  r->checksum = fmt::format("{:016x}", *rep.checksum);
  if (!expected) return;
  r->checksum_ok = *rep.checksum == *expected;
  if (!*r->checksum_ok && r->status == "ok") {
    r->status = "failed";
    r->error =
        fmt::format("checksum mismatch: the command reports {:016x}, the model gives {:016x}",
                    *rep.checksum, *expected);
  }
}

// The command's own figures must fit in its run: ready before done, done within its wall time.
std::string Implausible(const ExecReport& rep, double wall_s) {
  if (rep.ready_s && rep.done_s && *rep.ready_s > *rep.done_s) {
    return fmt::format("the command says ready at {} s but done at {} s: ready comes first",
                       *rep.ready_s, *rep.done_s);
  }
  const std::optional<double> last = rep.done_s ? rep.done_s : rep.ready_s;
  if (last && *last > wall_s) {
    return fmt::format("the command says {} s, more than its whole run ({:.6f} s): its own "
                       "times must be of this run, in seconds",
                       *last, wall_s);
  }
  return "";
}

// A `detail KEY VALUE` line's KEY VALUE into out->details: "" when it is one, else why not.
std::string AddDetail(const std::string& text, ExecReport* out) {
  const size_t sp = text.find(' ');
  const std::string key = text.substr(0, sp);
  const bool key_ok =
      !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      });
  const auto value = sp == std::string::npos
                         ? nlohmann::ordered_json()
                         : nlohmann::ordered_json::parse(text.substr(sp + 1), nullptr, false);
  const bool value_ok = value.is_string() || value.is_boolean() || value.is_number_integer() ||
                        (value.is_number_float() && std::isfinite(value.get<double>()));
  if (!key_ok || !value_ok) {
    return "expected 'detail KEY VALUE': KEY of letters, digits and '_' (64 at most), VALUE one "
           "JSON number, string, true or false";
  }
  if (!out->details.is_object()) out->details = nlohmann::ordered_json::object();
  if (!out->details.contains(key) && out->details.size() >= kMaxExecDetails) {
    return fmt::format("more than {} detail keys", kMaxExecDetails);
  }
  out->details[key] = value;
  return "";
}

nlohmann::ordered_json ExecJson(const ExecOutcome& o, const ExecReport& rep,
                                const std::string& timed, const ExecMeasured& how,
                                const RunRecord& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["timed"] = timed;
  if (o.wall_s > 0) j["command_s"] = o.wall_s;
  if (rep.ready_s) j["ready_s"] = *rep.ready_s;
  if (rep.done_s) j["done_s"] = *rep.done_s;
  if (rep.done_s && o.wall_s > 0) j["startup_s"] = o.wall_s - *rep.done_s;
  if (o.exit_status) j["exit_status"] = *o.exit_status;
  if (o.signal != 0) j["signal"] = o.signal;
  j["left_behind"] = o.left_behind;
  if (r.status == "failed" && !o.stderr_tail.empty()) j["stderr_tail"] = o.stderr_tail;
  j["measured"] = MeasuredText(how);
  return j;
}

// The run's status and error from how the command ended and what it said; `timed` region needs
// its `done`.
void JudgeEnd(const ExecOutcome& o, const ExecReport& rep, const Status& protocol,
              const std::string& timed, RunRecord* r) {
  r->status = "ok";
  if (!o.started) {
    r->status = "failed";
    r->error = o.error;
  } else if (rep.unsupported && protocol.ok()) {
    r->status = "unsupported";
    r->error = "the command says: " + *rep.unsupported;
  } else if (!o.error.empty()) {
    r->status = "failed";
    r->error = o.error;
    if (!o.stderr_tail.empty()) {
      const size_t nl = o.stderr_tail.rfind('\n');
      r->error =
          fmt::format("{}: {}", o.error,
                      nl == std::string::npos ? o.stderr_tail : o.stderr_tail.substr(nl + 1));
    }
  } else if (!protocol.ok()) {
    r->status = "failed";
    r->error = protocol.message();
  } else if (std::string why = Implausible(rep, o.wall_s); !why.empty()) {
    r->status = "failed";
    r->error = why;
  } else if (timed == kTimedRegion && !rep.done_s) {
    r->status = "failed";
    r->error = "timed = \"region\" ranks the command's own region, but it sent no 'done "
               "SECONDS' line on LOADBENCH_FD";
  }
}

}  // namespace

void FillExecRecord(const ExecOutcome& o, std::optional<uint64_t> expected,
                    const std::string& timed, const ExecMeasured& how, RunRecord* r) {
  ExecReport rep;
  const Status protocol = ParseExecReport(o.report_text, &rep);
  JudgeEnd(o, rep, protocol, timed, r);
  JudgeChecksum(rep, expected, r);
  // wall_s is the ranked region; ready_s only where it has wall_s's origin (the command's own).
  if (timed == kTimedRegion) {
    r->wall_s = rep.done_s;
    r->ready_s = rep.ready_s;
  } else if (o.wall_s > 0) {
    r->wall_s = o.wall_s;
  }
  r->peak_rss_bytes = static_cast<uint64_t>(o.usage.ru_maxrss) * 1024;
  r->read_bytes = o.read_bytes;
  r->load_start_mono_s = o.exec_mono_s;
  // The start the readers of a round are compared by (their spread, the round's duration):
  // the ranked region's, by the wall clock.
  if (timed == kTimedRegion && rep.done_s && o.done_unix_s) {
    r->load_start_unix_s = *o.done_unix_s - *rep.done_s;
  } else if (timed != kTimedRegion && o.started) {
    r->load_start_unix_s = o.exec_unix_s;
  }
  if (protocol.ok() && rep.details.is_object()) r->details = rep.details;
  if (o.left_behind > 0) {
    r->warnings.push_back(fmt::format(
        "left {} process{} running at its exit, killed by the runner: what {} did after it is "
        "in no figure",
        o.left_behind, o.left_behind == 1 ? "" : "es", o.left_behind == 1 ? "it" : "they"));
  }
  r->exec = ExecJson(o, rep, timed, how, *r);
}

Status ParseExecReport(const std::string& text, ExecReport* out) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    double secs = 0;
    const std::optional<uint64_t> sum = key == "checksum" ? ParseChecksum(value) : std::nullopt;
    if (key == "ready" && ParseSeconds(value, &secs)) {
      out->ready_s = secs;
    } else if (key == "done" && ParseSeconds(value, &secs)) {
      out->done_s = secs;
    } else if (sum) {
      out->checksum = *sum;
    } else if (key == "unsupported" && !value.empty()) {
      out->unsupported = value;
    } else if (key == "detail") {
      if (std::string why = AddDetail(value, out); !why.empty()) {
        return Status::Failed(fmt::format("LOADBENCH_FD line '{}': {}", line.substr(0, 200), why));
      }
    } else {
      return Status::Failed(fmt::format(
          "LOADBENCH_FD line '{}': expected 'ready SECONDS', 'done SECONDS', 'checksum HEX', "
          "'detail KEY VALUE' or 'unsupported REASON'",
          line.substr(0, 200)));
    }
  }
  return Status::Ok();
}

std::optional<uint64_t> ParseChecksum(const std::string& text) {
  uint64_t v = 0;
  if (text.empty() || text.size() > 16) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace loadbench
