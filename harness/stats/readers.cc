// The many-readers table of a run or an experiment's end (harness/stats/summary.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "harness/record/record.h"
#include "harness/stats/comparison.h"
#include "harness/stats/paired_stats.h"
#include "harness/stats/summary.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// A round's figures, or why it has none.
struct RoundFigures {
  std::optional<double> duration, gb_per_s, spread, start_spread;
  std::string why;
};

RoundFigures Figures(const RunReaders& round) {
  RoundFigures f;
  const RunTime t = TimeOfRun(round);
  if (!t.duration) {
    f.why = t.why;
    return f;
  }
  std::vector<double> walls;
  double bytes = 0;
  bool counted = true;
  for (const auto& [k, r] : round.by_reader) {
    walls.push_back(WallOf(*r));
    // A command reports no tensor_bytes: the bytes it needed (its part, or the model).
    const Json& delivered = r->contains("tensor_bytes") && (*r)["tensor_bytes"].is_number()
                                ? (*r)["tensor_bytes"]
                                : r->value("needed_bytes", Json());
    counted = counted && delivered.is_number();
    if (delivered.is_number()) bytes += delivered.get<double>();
  }
  f.duration = t.duration;
  f.start_spread = t.start_spread;
  if (*f.duration > 0 && counted) f.gb_per_s = bytes / *f.duration / 1e9;
  const double median = paired::Median(walls);
  if (median > 0) f.spread = *std::max_element(walls.begin(), walls.end()) / median;
  return f;
}

// The rounds of every run with more than one reader, by (cache, row label), then by (file, rep).
using Key = std::pair<std::string, std::string>;
std::map<Key, std::map<std::pair<std::string, int>, RunReaders>> RoundsByRow(
    const std::vector<Json>& runs, std::vector<Key>* order) {
  std::set<std::string> files;
  for (const Json& r : runs) files.insert(r.value("file", ""));
  std::map<Key, std::map<std::pair<std::string, int>, RunReaders>> rows;
  for (const Json& r : runs) {
    const int procs = r.value("procs", 1);
    if (procs < 2 || IsCeilingName(r.value("strategy", ""))) continue;
    // A round is every reader of the run, whatever its role (shm's creator and attacher).
    const Key key = {r.value("cache", "?"), RowLabel(r, files.size() > 1, false)};
    if (!rows.count(key)) order->push_back(key);
    RunReaders& round = rows[key][{r.value("file", ""), r.value("rep", 0)}];
    round.readers = procs;
    round.by_reader[r.value("proc", 0)] = &r;
  }
  return rows;
}

std::string Median(std::vector<double> v, const char* format) {
  return v.empty() ? "-" : fmt::format(fmt::runtime(format), paired::Median(v));
}

}  // namespace

std::string ReadersTable(const std::vector<Json>& runs) {
  std::vector<Key> order;
  const auto rows = RoundsByRow(runs, &order);
  if (rows.empty()) return "";
  size_t width = 22;
  for (const Key& k : order) width = std::max(width, k.second.size());
  std::string out = fmt::format(
      "many readers: a round lasts from its first reader's start to its last reader's end; "
      "total_GB/s is every reader's bytes over that time; spread: the slowest reader's time over "
      "the median's; start_ms: how far apart the readers started\n"
      "{:<5} {:<{}} {:>7} {:>11} {:>10} {:>7} {:>8}\n",
      "cache", "strategy", width, "rounds", "duration_s", "total_GB/s", "spread", "start_ms");
  std::string missing;
  for (const Key& key : order) {
    std::vector<double> duration, gbps, spread, start;
    for (const auto& [where, round] : rows.at(key)) {
      const RoundFigures f = Figures(round);
      if (!f.duration) {
        missing += fmt::format("  {} {} rep {}: no duration: {}\n", key.first, key.second,
                               where.second, f.why);
        continue;
      }
      duration.push_back(*f.duration);
      if (f.gb_per_s) gbps.push_back(*f.gb_per_s);
      if (f.spread) spread.push_back(*f.spread);
      if (f.start_spread) start.push_back(*f.start_spread * 1e3);
    }
    out += fmt::format("{:<5} {:<{}} {:>7} {:>11} {:>10} {:>7} {:>8}\n", key.first, key.second,
                       width, fmt::format("{}/{}", duration.size(), rows.at(key).size()),
                       Median(duration, "{:.3f}"), Median(gbps, "{:.2f}"), Median(spread, "{:.2f}"),
                       Median(start, "{:.1f}"));
  }
  return out + missing;
}

}  // namespace loadbench
