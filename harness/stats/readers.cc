// The many-readers table of a run or an experiment's end (harness/stats/summary.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "harness/record/record.h"
#include "harness/stats/paired_stats.h"
#include "harness/stats/summary.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// One run of several readers: its records, by reader.
struct Round {
  int readers = 0;
  std::map<int, const Json*> by_reader;
};

// A round's figures, or why it has none.
struct RoundFigures {
  std::optional<double> duration, gb_per_s, spread;
  std::string why;
};

std::string Who(int k, const Json& r) {
  std::string out = fmt::format("reader {}", k);
  if (r.contains("rank"))
    out += fmt::format(" (rank {}, host {})", r.value("rank", -1), r.value("host", "?"));
  return out;
}

RoundFigures Figures(const Round& round) {
  RoundFigures f;
  std::vector<double> walls;
  double bytes = 0;
  for (int k = 0; k < round.readers; ++k) {
    const auto it = round.by_reader.find(k);
    if (it == round.by_reader.end()) {
      f.why = fmt::format("reader {} left no record", k);
      return f;
    }
    const Json& r = *it->second;
    const auto wall = r.find("wall_s");
    if (r.value("status", "") != "ok" || wall == r.end() || !wall->is_number()) {
      f.why =
          fmt::format("{} {}: {}", Who(k, r), r.value("status", "?"),
                      r.contains("error") && r["error"].is_string() ? r.value("error", "") : "");
      return f;
    }
    walls.push_back(wall->get<double>());
    bytes += r.value("tensor_bytes", 0.0);
  }
  f.duration = *std::max_element(walls.begin(), walls.end());
  if (*f.duration > 0) f.gb_per_s = bytes / *f.duration / 1e9;
  const double median = paired::Median(walls);
  if (median > 0) f.spread = *f.duration / median;
  return f;
}

// The rounds of every run with more than one reader, by (cache, row label), then by (file, rep).
using Key = std::pair<std::string, std::string>;
std::map<Key, std::map<std::pair<std::string, int>, Round>> RoundsByRow(
    const std::vector<Json>& runs, std::vector<Key>* order) {
  std::set<std::string> files;
  for (const Json& r : runs) files.insert(r.value("file", ""));
  std::map<Key, std::map<std::pair<std::string, int>, Round>> rows;
  for (const Json& r : runs) {
    const int procs = r.value("procs", 1);
    if (procs < 2 || r.value("strategy", "") == kCeiling) continue;
    const Key key = {r.value("cache", "?"), RowLabel(r, files.size() > 1)};
    if (!rows.count(key)) order->push_back(key);
    Round& round = rows[key][{r.value("file", ""), r.value("rep", 0)}];
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
      "many readers: a round lasts as long as its slowest reader; GB/s is every byte delivered "
      "over that time\n{:<5} {:<{}} {:>7} {:>11} {:>10} {:>7}\n",
      "cache", "strategy", width, "rounds", "duration_s", "total_GB/s", "spread");
  std::string missing;
  for (const Key& key : order) {
    std::vector<double> duration, gbps, spread;
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
    }
    out +=
        fmt::format("{:<5} {:<{}} {:>7} {:>11} {:>10} {:>7}\n", key.first, key.second, width,
                    fmt::format("{}/{}", duration.size(), rows.at(key).size()),
                    Median(duration, "{:.3f}"), Median(gbps, "{:.2f}"), Median(spread, "{:.2f}"));
  }
  return out + missing;
}

}  // namespace loadbench
