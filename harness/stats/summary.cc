#include "harness/stats/summary.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "harness/record/record.h"
#include "harness/stats/comparison.h"
#include "harness/stats/paired_stats.h"

namespace loadbench {
namespace {

using paired::Median;

// A figure of a record; nullopt when it is missing or null (never counted as 0).
std::optional<double> Num(const nlohmann::ordered_json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

void Add(std::vector<double>* to, std::optional<double> v) {
  if (v) to->push_back(*v);
}

// The ok runs' figures of one row, and how the others ended. A row holds like with like only:
// one file, cache state, strategy spec, role, procs and memory limit.
struct Group {
  std::vector<double> wall, ready, rss, major, minor, read;
  std::vector<double> request, reads_per_s;  // the storage's device, where it has one
  std::optional<double> bytes;  // what one reader delivers: the file, or its part of it
  bool many = false;            // several readers: the figures are each reader's
  int not_ok = 0;
  std::map<std::string, int> statuses;
};

// The rows: cold ones first, then warm; in first-run order within each. Ceiling reads go apart
// (their GB/s when ok).
// The device ceiling's reads of one storage ("" without any).
struct DeviceCeiling {
  std::vector<double> gbps;  // the ok ones'
  int runs = 0;
  std::set<std::string> recipes;  // the read recipes the ceiling records name
};

struct Table {
  std::vector<std::pair<std::string, std::string>> order;  // cache, row label
  std::map<std::pair<std::string, std::string>, Group> groups;
  std::map<std::string, DeviceCeiling> ceilings;  // by storage
  bool device = false;                            // some run has the device's counters
  // The link's and the server's ceilings, by (name, link): their GB/s when ok, and how many.
  std::map<std::pair<std::string, std::string>, std::pair<std::vector<double>, int>> net;
};

Table Tabulate(const std::vector<nlohmann::ordered_json>& runs) {
  Table t;
  std::set<std::string> files;
  for (const auto& r : runs) files.insert(r.value("file", ""));
  for (const auto& r : runs) {
    if (r.value("strategy", "") == kCeiling) {
      DeviceCeiling& c = t.ceilings[r.value("storage", "")];
      ++c.runs;
      if (const auto p = r.find("params"); p != r.end() && p->is_object()) {
        c.recipes.insert(p->value("recipe", "direct_1m_qd32"));
      }
      if (r.value("status", "") == "ok") Add(&c.gbps, Num(r, "gb_per_s"));
      continue;
    }
    if (IsCeilingName(r.value("strategy", ""))) {
      auto& [gbps, n] = t.net[{r.value("strategy", ""), r.value("link", "")}];
      ++n;
      if (r.value("status", "") == "ok") Add(&gbps, Num(r, "gb_per_s"));
      continue;
    }
    const auto key = std::make_pair(r.value("cache", "?"), RowLabel(r, files.size() > 1));
    if (!t.groups.count(key)) t.order.push_back(key);
    Group& g = t.groups[key];
    const std::string status = r.value("status", "?");
    if (status != "ok") {
      ++g.not_ok;
      ++g.statuses[status];
      continue;
    }
    Add(&g.wall, Num(r, "wall_s"));
    Add(&g.ready, Num(r, "ready_s"));
    Add(&g.rss, Num(r, "peak_rss_bytes"));
    // The load's own faults; a record from before they were recorded has the process's only.
    const bool load = r.contains("load_minor_faults");
    Add(&g.major, Num(r, load ? "load_major_faults" : "major_faults"));
    Add(&g.minor, Num(r, load ? "load_minor_faults" : "minor_faults"));
    Add(&g.read, Num(r, "read_bytes"));
    Add(&g.request, Num(r, "device_request_bytes"));
    Add(&g.reads_per_s, Num(r, "device_reads_per_s"));
    t.device = t.device || r.contains("device_reads");
    // A reader of a part delivers the part's bytes, not the file's.
    const bool part = r.value("pattern", "replicated") != "replicated";
    if (!g.bytes) g.bytes = Num(r, part ? "tensor_bytes" : "file_bytes");
    g.many = g.many || r.value("procs", 1) > 1;
  }
  std::stable_sort(t.order.begin(), t.order.end(), [](const auto& a, const auto& b) {
    return (a.first == "cold") > (b.first == "cold");
  });
  return t;
}

// The median of `v` scaled and formatted to `width` columns with `decimals`, or "-" when no run
// has the figure.
std::string Cell(const std::vector<double>& v, int width, int decimals, double scale = 1,
                 const char* unit = "") {
  if (v.empty()) return fmt::format("{:>{}}", "-", width + static_cast<int>(strlen(unit)));
  return fmt::format("{:>{}.{}f}{}", Median(v) / scale, width, decimals, unit);
}

// The device's columns, where some run has its counters: the median request and reads per second.
std::string DeviceCells(const Group& g, bool device) {
  if (!device) return "";
  return " " + Cell(g.request, 7, 0, 1024, " KiB") + " " + Cell(g.reads_per_s, 8, 0);
}

std::string Row(const std::pair<std::string, std::string>& key, const Group& g, size_t width,
                bool device) {
  const int total = static_cast<int>(g.wall.size()) + g.not_ok;
  const std::string ok = fmt::format("{}/{}", g.wall.size(), total);
  if (g.wall.empty()) {
    std::string why;
    for (const auto& [status, n] : g.statuses) why += fmt::format(" {} {}", n, status);
    return fmt::format("{:<5} {:<{}} {:>5}  no ok runs:{}\n", key.first, key.second, width, ok,
                       why);
  }
  const double med = Median(g.wall);
  const std::string gbps = g.bytes && med > 0 ? fmt::format("{:>7.2f}", *g.bytes / med / 1e9)
                                              : fmt::format("{:>7}", "-");
  return fmt::format("{:<5} {:<{}} {:>5} {:>9.3f} {:>9.3f} {:>9.3f} {} {} {} {} {} {}{}\n",
                     key.first, key.second, width, ok, med,
                     *std::min_element(g.wall.begin(), g.wall.end()),
                     *std::max_element(g.wall.begin(), g.wall.end()), gbps, Cell(g.ready, 8, 3),
                     Cell(g.rss, 7, 0, 1e6, " MB"), Cell(g.read, 7, 0, 1e6, " MB"),
                     Cell(g.major, 9, 0), Cell(g.minor, 10, 0), DeviceCells(g, device));
}

// One line per storage's device ceiling ("ceiling on xfs:preset=gp3 (...)"); without storages,
// one line for the data folder's device.
std::string CeilingLines(const Table& t) {
  std::string out;
  for (const auto& [storage, c] : t.ceilings) {
    const std::string on = storage.empty() ? "" : " on " + storage;
    if (c.gbps.empty()) {
      out += fmt::format("ceiling{}: none of {} device reads was ok\n", on, c.runs);
      continue;
    }
    std::string recipes;
    for (const std::string& r : c.recipes) recipes += (recipes.empty() ? "" : ", ") + r;
    out += fmt::format("ceiling{} (the device's limit, the fastest read recipe: {}): {}/{} ok, "
                       "median {:.2f} GB/s, min {:.2f}, max {:.2f}\n",
                       on, recipes, c.gbps.size(), c.runs, Median(c.gbps),
                       *std::min_element(c.gbps.begin(), c.gbps.end()),
                       *std::max_element(c.gbps.begin(), c.gbps.end()));
  }
  return out;
}

// One line per link and ceiling: the link's own limit (iperf3) and the server's (its objects
// fetched into nothing, the link unshaped for it).
std::string NetCeilingLines(const Table& t) {
  std::string out;
  for (const auto& [key, v] : t.net) {
    const auto& [name, link] = key;
    const auto& [gbps, n] = v;
    const std::string what =
        name == kLinkCeiling
            ? fmt::format("link ceiling at {} (iperf3 over the link)", link)
            : fmt::format("server ceiling in the {} rounds (the link unshaped for it)", link);
    if (gbps.empty()) {
      out += fmt::format("{}: none of {} was ok\n", what, n);
      continue;
    }
    out += fmt::format("{}: {}/{} ok, median {:.3f} GB/s, min {:.3f}, max {:.3f}\n", what,
                       gbps.size(), n, Median(gbps), *std::min_element(gbps.begin(), gbps.end()),
                       *std::max_element(gbps.begin(), gbps.end()));
  }
  return out;
}

}  // namespace

// The row label: the strategy spec, its marks (RowMarks: an exec command unverified, the region
// it timed), its role ([creator], [attacher]) when it has one, how many workers and under which
// memory limit when those are set, and the file's name when the records hold more than one file.
std::string RowLabel(const nlohmann::ordered_json& r, bool name_file, bool with_role) {
  std::string label = r.value("strategy_spec", r.value("strategy", "?"));
  if (const std::string marks = RowMarks(r); !marks.empty()) label += " (" + marks + ")";
  if (const std::string role = RoleOf(r); with_role && !role.empty()) label += "[" + role + "]";
  if (const auto procs = Num(r, "procs"); procs && *procs > 1) {
    label += fmt::format(" x{:.0f}", *procs);
  }
  if (const auto p = r.find("pattern"); p != r.end() && p->is_string() && *p != "replicated") {
    label += " " + p->get<std::string>();
  }
  if (const auto limit = Num(r, "memory_limit_bytes")) {
    label += fmt::format(" limit {:.0f}MiB", *limit / (1 << 20));
  }
  if (const auto link = r.find("link"); link != r.end() && link->is_string()) {
    label += " link " + link->get<std::string>();
  }
  if (const auto storage = r.find("storage"); storage != r.end() && storage->is_string()) {
    label += " on " + storage->get<std::string>();
  }
  if (name_file) {
    const std::string file = r.value("file", "?");
    label += " " + file.substr(file.rfind('/') + 1);
  }
  return label;
}

std::string SummaryTable(const std::vector<nlohmann::ordered_json>& runs) {
  const Table t = Tabulate(runs);
  size_t width = 22;
  for (const auto& key : t.order) width = std::max(width, key.second.size());
  std::string out =
      fmt::format("{:<5} {:<{}} {:>5} {:>9} {:>9} {:>9} {:>7} {:>8} {:>10} {:>10} {:>9} {:>10}{}\n",
                  "cache", "strategy", width, "ok", "median_s", "min_s", "max_s", "GB/s", "ready_s",
                  "peak_RSS", "read", "major_flt", "minor_flt",
                  t.device ? fmt::format(" {:>11} {:>8}", "dev_request", "dev_rd/s") : "");
  bool many = false;
  for (const auto& key : t.order) {
    out += Row(key, t.groups.at(key), width, t.device);
    many = many || t.groups.at(key).many;
  }
  if (many) {
    out += "rows of several readers (xN): each reader's own figures, GB/s per reader (its bytes "
           "over its own time); the many-readers table gives each round's total\n";
  }
  if (t.device) {
    out += "dev_request, dev_rd/s: the storage's device, its average read request and reads per "
           "second over the run (docs/storage.md)\n";
  }
  return out + CeilingLines(t) + NetCeilingLines(t);
}

}  // namespace loadbench
