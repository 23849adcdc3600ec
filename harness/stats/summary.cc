#include "harness/stats/summary.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "harness/probe/probe_measure.h"
#include "harness/run/session.h"
#include "harness/stats/paired_stats.h"

namespace loadbench {
namespace {

using paired::Median;

double Num(const nlohmann::ordered_json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// The ok runs' figures of one row (a strategy in a cache state), and how the others ended.
struct Group {
  std::vector<double> wall, ready, rss, major, minor, read;
  double bytes = 0;
  int not_ok = 0;
  std::map<std::string, int> statuses;
};

// The rows: cold ones first, then warm; strategies in first-run order within each. Ceiling
// reads go apart (their GB/s when ok).
struct Table {
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Group> groups;
  std::vector<double> ceiling;
  int ceiling_runs = 0;
};

Table Tabulate(const std::vector<nlohmann::ordered_json>& runs) {
  Table t;
  for (const auto& r : runs) {
    if (r.value("strategy", "") == kCeiling) {
      ++t.ceiling_runs;
      if (r.value("status", "") == "ok") t.ceiling.push_back(Num(r, "gb_per_s"));
      continue;
    }
    std::string strategy = r.value("strategy_spec", r.value("strategy", "?"));
    // A strategy whose runs play different roles (shm: creator, attacher) gets a row per role.
    if (const auto d = r.find("details"); d != r.end() && d->is_object() && d->contains("role")) {
      strategy += "[" + d->value("role", "?") + "]";
    }
    const auto key = std::make_pair(r.value("cache", "?"), strategy);
    if (!t.groups.count(key)) t.order.push_back(key);
    Group& g = t.groups[key];
    const std::string status = r.value("status", "?");
    if (status != "ok") {
      ++g.not_ok;
      ++g.statuses[status];
      continue;
    }
    g.wall.push_back(Num(r, "wall_s"));
    g.ready.push_back(Num(r, "ready_s"));
    g.rss.push_back(Num(r, "peak_rss_bytes"));
    // The load's own faults; a record from before they were recorded has the process's only.
    const bool load = r.contains("load_minor_faults");
    g.major.push_back(Num(r, load ? "load_major_faults" : "major_faults"));
    g.minor.push_back(Num(r, load ? "load_minor_faults" : "minor_faults"));
    g.read.push_back(Num(r, "read_bytes"));
    g.bytes = Num(r, "file_bytes");
  }
  std::stable_sort(t.order.begin(), t.order.end(), [](const auto& a, const auto& b) {
    return (a.first == "cold") > (b.first == "cold");
  });
  return t;
}

std::string Row(const std::pair<std::string, std::string>& key, const Group& g, size_t width) {
  const int total = static_cast<int>(g.wall.size()) + g.not_ok;
  const std::string ok = fmt::format("{}/{}", g.wall.size(), total);
  if (g.wall.empty()) {
    std::string why;
    for (const auto& [status, n] : g.statuses) why += fmt::format(" {} {}", n, status);
    return fmt::format("{:<5} {:<{}} {:>5}  no ok runs:{}\n", key.first, key.second, width, ok,
                       why);
  }
  const double med = Median(g.wall);
  return fmt::format(
      "{:<5} {:<{}} {:>5} {:>9.3f} {:>9.3f} {:>9.3f} {:>7.2f} {:>8.3f} {:>7.0f} MB {:>7.0f} MB "
      "{:>9.0f} {:>10.0f}\n",
      key.first, key.second, width, ok, med, *std::min_element(g.wall.begin(), g.wall.end()),
      *std::max_element(g.wall.begin(), g.wall.end()), med > 0 ? g.bytes / med / 1e9 : 0.0,
      Median(g.ready), Median(g.rss) / 1e6, Median(g.read) / 1e6, Median(g.major),
      Median(g.minor));
}

std::string CeilingLine(const Table& t) {
  if (t.ceiling_runs == 0) return "";
  if (t.ceiling.empty()) {
    return fmt::format("ceiling: none of {} device reads was ok\n", t.ceiling_runs);
  }
  return fmt::format("ceiling (device read, O_DIRECT io_uring QD{}): {}/{} ok, median {:.2f} "
                     "GB/s, min {:.2f}, max {:.2f}\n",
                     probe::kQueueDepth, t.ceiling.size(), t.ceiling_runs, Median(t.ceiling),
                     *std::min_element(t.ceiling.begin(), t.ceiling.end()),
                     *std::max_element(t.ceiling.begin(), t.ceiling.end()));
}

}  // namespace

std::string SummaryTable(const std::vector<nlohmann::ordered_json>& runs) {
  const Table t = Tabulate(runs);
  size_t width = 22;
  for (const auto& key : t.order) width = std::max(width, key.second.size());
  std::string out = fmt::format(
      "{:<5} {:<{}} {:>5} {:>9} {:>9} {:>9} {:>7} {:>8} {:>10} {:>10} {:>9} {:>10}\n", "cache",
      "strategy", width, "ok", "median_s", "min_s", "max_s", "GB/s", "ready_s", "peak_RSS", "read",
      "major_flt", "minor_flt");
  for (const auto& key : t.order) out += Row(key, t.groups.at(key), width);
  return out + CeilingLine(t);
}

}  // namespace loadbench
