#include "harness/stats/comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/record/record.h"
#include "harness/stats/paired_stats.h"

namespace loadbench {

using Json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();

Condition ConditionOf(const Json& r) {
  return {r.value("file", ""),
          r.value("cache", ""),
          r.value("procs", 1),
          r.value("memory_limit_bytes", uint64_t{0}),
          r.value("pattern", "replicated"),
          r.value("link", ""),
          r.value("storage", "")};
}

std::string ConditionText(const Condition& c, bool with_file) {
  const auto& [file, cache, procs, limit, pattern, link, storage] = c;
  std::string out = cache;
  if (!storage.empty()) out += " on " + storage;
  if (!link.empty()) out += " link " + link;
  if (procs > 1) out += fmt::format(" x{} procs", procs);
  if (pattern != "replicated") out += " " + pattern;
  if (limit > 0) out += fmt::format(" limit {} MiB", limit >> 20);
  if (with_file) out += " " + file.substr(file.find_last_of('/') + 1);
  return out;
}

bool IsOk(const Json& r) { return r.value("status", "") == "ok"; }

std::string RowMarks(const Json& r) {
  std::string marks;
  const auto v = r.find("verify");
  if (v != r.end() && *v == "none") marks = "unverified";
  const auto e = r.find("exec");
  if (e != r.end() && e->is_object() && e->contains("timed")) {
    const std::string timed = e->value("timed", "");
    if (!marks.empty()) marks += ", ";
    marks += timed == "region" ? "own region" : "whole command";
  }
  return marks;
}

double WallOf(const Json& r) {
  const auto it = r.find("wall_s");
  return it != r.end() && it->is_number() ? it->get<double>() : 0.0;
}

namespace {

// "reader K", with its host and rank where it ran under MPI, as the report says it
// (analysis/ readers.who; pinned by analysis/tests/fixtures/console).
std::string Who(int k, const Json& r) {
  std::vector<std::string> where;
  if (r.contains("host") && r["host"].is_string()) {
    where.push_back("host " + r["host"].get<std::string>());
  }
  if (r.contains("rank") && r["rank"].is_number()) {
    where.push_back(fmt::format("rank {}", r["rank"].get<int>()));
  }
  const std::string out = fmt::format("reader {}", k);
  return where.empty() ? out : fmt::format("{} ({})", out, fmt::join(where, ", "));
}

std::optional<double> StartOf(const Json& r) {
  const auto it = r.find("load_start_unix_s");
  if (it == r.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

using RunKey = std::tuple<Condition, std::string, int>;  // condition, spec, rep

// The runs made in rounds, by condition, spec and rep.
std::map<RunKey, RunReaders> RunsInRounds(const std::vector<Json>& records) {
  std::map<RunKey, RunReaders> runs;
  for (const Json& r : records) {
    if (IsCeilingName(r.value("strategy", ""))) continue;
    // Runs made outside rounds (grouped order) share no round with anything: never paired.
    if (!r.contains("position")) continue;
    RunReaders& run = runs[{ConditionOf(r), r.value("strategy_spec", ""), r.value("rep", 0)}];
    run.readers = r.value("procs", 1);
    run.by_reader[r.value("proc", 0)] = &r;
  }
  return runs;
}

// From the first reader's start to the last one's end where every one recorded its start, else
// the largest wall_s; and how far apart they started.
void Span(const std::vector<const Json*>& readers, RunTime* t) {
  double first = kInf, last_start = -kInf, last_end = -kInf, most = 0;
  bool starts = true;
  for (const Json* r : readers) {
    most = std::max(most, WallOf(*r));
    const std::optional<double> start = StartOf(*r);
    starts = starts && start.has_value();
    if (!start) continue;
    first = std::min(first, *start);
    last_start = std::max(last_start, *start);
    last_end = std::max(last_end, *start + WallOf(*r));
  }
  t->duration = starts ? last_end - first : most;
  if (starts) t->start_spread = last_start - first;
}

}  // namespace

std::string RoleOf(const Json& r) {
  const auto d = r.find("details");
  return d != r.end() && d->is_object() ? d->value("role", "") : "";
}

RunTime TimeOfRun(const RunReaders& run) {
  RunTime t;
  std::vector<const Json*> readers;
  for (int k = 0; k < run.readers; ++k) {
    const auto it = run.by_reader.find(k);
    if (it == run.by_reader.end()) {
      t.why = fmt::format("reader {}: no record", k);
      return t;
    }
    const Json& r = *it->second;
    if (!IsOk(r) || WallOf(r) <= 0) {
      const auto error = r.find("error");
      t.why = fmt::format("{}: {}: {}", Who(k, r), r.value("status", "?"),
                          error != r.end() && error->is_string() ? error->get<std::string>()
                                                                 : "no time");
      return t;
    }
    readers.push_back(&r);
  }
  Span(readers, &t);
  return t;
}

Rounds RoundsOf(const std::vector<Json>& records) {
  Rounds out;
  for (const auto& [key, run] : RunsInRounds(records)) {
    if (!TimeOfRun(run).duration) continue;  // a run counts only whole
    // Its readers by role ("" for a run without roles): each role is timed on its own.
    std::map<std::string, std::vector<const Json*>> roles;
    for (const auto& [k, r] : run.by_reader) roles[RoleOf(*r)].push_back(r);
    for (const auto& [role, readers] : roles) {
      RunTime t;
      Span(readers, &t);
      out[std::get<0>(key)][{std::get<1>(key), role}][std::get<2>(key)] = *t.duration;
    }
  }
  return out;
}

std::vector<std::string> BrokenRuns(const std::vector<Json>& records, bool with_file) {
  std::vector<std::string> out;
  for (const auto& [key, run] : RunsInRounds(records)) {
    const RunTime t = TimeOfRun(run);
    if (t.duration || run.readers < 2) continue;
    out.push_back(fmt::format("{} {} round {}: {}", ConditionText(std::get<0>(key), with_file),
                              std::get<1>(key), std::get<2>(key), t.why));
  }
  return out;
}

std::string MarkedSpec(const Comparison& c) {
  std::string out = c.marks.empty() ? c.spec : c.spec + " (" + c.marks + ")";
  return c.role.empty() ? out : out + "[" + c.role + "]";
}

namespace {

// The baseline's time in each round: its slowest role's (the whole run's, without roles).
std::map<int, double> BaselineRounds(const std::map<Series, std::map<int, double>>& series,
                                     const std::string& baseline) {
  std::map<int, double> out;
  for (const auto& [name, rounds] : series) {
    if (name.first != baseline) continue;
    for (const auto& [rep, t] : rounds) out[rep] = std::max(out[rep], t);
  }
  return out;
}

Comparison Compare(const Condition& condition, const Series& name,
                   const std::map<int, double>& rounds, const std::map<int, double>& base) {
  std::vector<double> d;
  for (const auto& [rep, t] : rounds) {
    const auto b = base.find(rep);
    if (b != base.end()) d.push_back(std::log(t / b->second));
  }
  const paired::Interval i = paired::SignedRankInterval(d);
  Comparison c;
  std::tie(c.file, c.cache, c.procs, c.memory_limit_bytes, c.pattern, c.link, c.storage) =
      condition;
  std::tie(c.spec, c.role) = name;
  c.n = i.n;
  c.ratio = i.n > 0 ? std::exp(i.estimate) : 0;
  c.low = i.bounded ? std::exp(i.low) : 0;
  c.high = i.bounded ? std::exp(i.high) : kInf;
  c.level = i.bounded ? i.level : 0;
  c.half_width = paired::HalfWidth(i);
  c.significant = paired::Significant(i);
  return c;
}

}  // namespace

RoundsVerdict CompareWithBaseline(const std::vector<Json>& records, const std::string& baseline,
                                  double target) {
  RoundsVerdict v;
  std::map<std::pair<Condition, std::string>, std::string> marks;
  for (const Json& r : records) {
    if (!IsOk(r)) continue;
    std::string& m = marks[{ConditionOf(r), r.value("strategy_spec", "")}];
    if (m.empty()) m = RowMarks(r);
  }
  for (const auto& [condition, series] : RoundsOf(records)) {
    for (const auto& [name, rounds] : series) {
      v.rounds = std::max(v.rounds, static_cast<int>(rounds.size()));
    }
    const std::map<int, double> base = BaselineRounds(series, baseline);
    for (const auto& [name, rounds] : series) {
      if (name.first == baseline) continue;
      Comparison c = Compare(condition, name, rounds, base);
      c.marks = marks[{condition, name.first}];
      c.baseline = baseline;
      c.met = c.half_width <= target;
      v.comparisons.push_back(c);
    }
  }
  v.met = !v.comparisons.empty() && std::all_of(v.comparisons.begin(), v.comparisons.end(),
                                                [](const Comparison& c) { return c.met; });
  return v;
}

}  // namespace loadbench
