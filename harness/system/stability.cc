#include "harness/system/stability.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/system/env.h"
#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// Processes under this share of one CPU are background noise, not worth a line in env.json.
constexpr double kListCpuPercent = 10.0;
// Enough to keep env.json short; the busiest come first, so nothing that matters is cut.
constexpr size_t kMaxListed = 10;
// A quarter of a CPU taken by someone else steals whole time slices from a run on a machine of
// a few cores, and the same process usually also uses memory bandwidth and caches.
constexpr double kBusyCpuPercent = 25.0;
// The harness sleeps through the check, so the load is other work (or its own of the last
// minute: the 1-minute figure decays over about a minute). Above half a runnable task per
// core, a run's threads often find their core taken. Cold reads count too: tasks in D state
// add to Linux's load.
constexpr double kLoadPerCore = 0.5;
// Dirty pages are written back once they are vm.dirty_expire_centisecs old (30 s by default),
// so possibly in the middle of a run, whose reads then queue behind the writes. A few MiB is
// routine (logs, the results folder); tens of MiB are someone else's bulk write.
constexpr int64_t kDirtyBytes = 64 * kMiB;
// Below this, the page cache of any multi-GB file and the runs' own buffers push each other
// out, so reclaim runs inside the timed loads.
constexpr int64_t kLowAvailableBytes = kGiB;
// khugepaged wakes every scan_sleep_millisecs (10 s by default) for a short scan; at this
// share it is scanning hard, copying pages into huge pages and taking the memory bandwidth and
// mmap locks the runs use.
constexpr double kKhugepagedCpuPercent = 5.0;

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Whole token only; from_chars, so that the locale cannot change the decimal point.
template <typename T>
std::optional<T> Parse(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<int64_t> ReadInt(const std::string& path) {
  auto s = ReadFile(path);
  return s ? Parse<int64_t>(Trim(*s)) : std::nullopt;
}

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (true) {
    i = s.find_first_not_of(" \t\n", i);
    if (i == std::string_view::npos) return out;
    size_t e = s.find_first_of(" \t\n", i);
    out.push_back(s.substr(i, e == std::string_view::npos ? std::string_view::npos : e - i));
    if (e == std::string_view::npos) return out;
    i = e;
  }
}

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// Lines "key : value" (cpuinfo, meminfo), split at the first colon, both sides trimmed.
template <typename F>
void ForEachKeyValue(const std::string& text, F f) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string_view l(line);
    f(Trim(l.substr(0, colon)), Trim(l.substr(colon + 1)));
  }
}

std::optional<int64_t> Cores(const std::string& proc_dir) {
  int64_t n = 0;
  if (auto cpuinfo = ReadFile(proc_dir + "/cpuinfo")) {
    ForEachKeyValue(*cpuinfo, [&](std::string_view k, std::string_view) {
      if (k == "processor") ++n;
    });
  }
  if (n > 0) return n;
  long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? std::optional<int64_t>(online) : std::nullopt;
}

struct ProcStat {
  std::string comm;
  int ppid = 0;
  uint64_t ticks = 0;       // utime + stime
  uint64_t start_time = 0;  // tells a reused pid from the process seen before
};

// /proc/PID/stat: "pid (comm) state ppid ... utime stime ... starttime ...". The comm may hold
// spaces and ')' itself, so it ends at the last ')'.
std::optional<ProcStat> ParseStat(const std::string& text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return std::nullopt;
  }
  // Fields after the comm, counted from 0 = state (field 3 of proc(5)).
  constexpr size_t kPpid = 1, kUtime = 11, kStime = 12, kStartTime = 19;
  auto w = Words(std::string_view(text).substr(close + 1));
  if (w.size() <= kStartTime) return std::nullopt;
  auto ppid = Parse<int>(w[kPpid]);
  auto utime = Parse<uint64_t>(w[kUtime]);
  auto stime = Parse<uint64_t>(w[kStime]);
  auto start = Parse<uint64_t>(w[kStartTime]);
  if (!ppid || !utime || !stime || !start) return std::nullopt;
  return ProcStat{text.substr(open + 1, close - open - 1), *ppid, *utime + *stime, *start};
}

using Snapshot = std::map<int, ProcStat>;

// Every process whose stat could be read; nullopt when proc_dir cannot be listed. Processes
// that exit while we list are skipped.
std::optional<Snapshot> SampleProcesses(const std::string& proc_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(proc_dir, ec);
  if (ec) return std::nullopt;
  Snapshot out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    auto pid = Parse<int>(it->path().filename().string());
    if (!pid || *pid <= 0) continue;
    auto text = ReadFile(it->path().string() + "/stat");
    if (!text) continue;
    if (auto st = ParseStat(*text)) out.emplace(*pid, std::move(*st));
  }
  return out;
}

// Ticks `pid` of `end` used since `start`. A process not in `start` (or a reused pid) was born
// in the window, so all its ticks are.
uint64_t DeltaTicks(const Snapshot& start, int pid, const ProcStat& end) {
  auto s = start.find(pid);
  if (s == start.end() || s->second.start_time != end.start_time) return end.ticks;
  return end.ticks >= s->second.ticks ? end.ticks - s->second.ticks : 0;
}

// Share of one CPU, to 0.1 (the tick is 1% of a 1 s window; more digits would be noise).
double CpuPercent(uint64_t ticks, double window_s) {
  static const long kTicksPerS = ::sysconf(_SC_CLK_TCK);
  double pct = static_cast<double>(ticks) / (static_cast<double>(kTicksPerS) * window_s) * 100;
  return std::round(pct * 10) / 10;
}

// Whether `pid` is `self` or descends from it, by the ppid chains of both samples (a child
// that exited before the end sample still links its own children through the start sample).
bool IsSelfOrDescendant(int pid, int self, const Snapshot& start, const Snapshot& end) {
  // Bounded, so that a cycle in a malformed tree cannot loop forever.
  for (size_t steps = 0; pid > 0 && steps <= start.size() + end.size(); ++steps) {
    if (pid == self) return true;
    auto e = end.find(pid);
    if (e != end.end()) {
      pid = e->second.ppid;
      continue;
    }
    auto s = start.find(pid);
    if (s == start.end()) return false;
    pid = s->second.ppid;
  }
  return false;
}

std::string Size(int64_t bytes) {
  if (bytes >= kGiB) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / kGiB);
  return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / kMiB);
}

struct KhugepagedCounters {
  std::optional<int64_t> pages_collapsed, full_scans;
};

KhugepagedCounters ReadKhugepaged(const std::string& sys_dir) {
  const std::string dir = sys_dir + "/kernel/mm/transparent_hugepage/khugepaged/";
  return {ReadInt(dir + "pages_collapsed"), ReadInt(dir + "full_scans")};
}

std::optional<int64_t> Delta(const std::optional<int64_t>& a, const std::optional<int64_t>& b) {
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

// The two samples of the window: processes and khugepaged's counters at its start and end.
struct Samples {
  KhugepagedCounters khuge0, khuge1;
  std::optional<Snapshot> procs0, procs1;
};

Samples TakeSamples(const StabilityOptions& o, bool timed) {
  Samples s;
  s.khuge0 = ReadKhugepaged(o.sys_dir);
  s.procs0 = SampleProcesses(o.proc_dir);
  if (timed) std::this_thread::sleep_for(std::chrono::duration<double>(o.window_s));
  if (o.between_samples) o.between_samples();
  s.procs1 = SampleProcesses(o.proc_dir);
  s.khuge1 = ReadKhugepaged(o.sys_dir);
  return s;
}

// "loadavg" and "cores", and a warning when the 1-minute load is high for the cores.
void CheckLoad(const StabilityOptions& o, Json* j, std::vector<std::string>* warnings) {
  Json loadavg;
  std::optional<int64_t> cores = Cores(o.proc_dir);
  if (auto text = ReadFile(o.proc_dir + "/loadavg")) {
    auto w = Words(*text);
    std::optional<double> l1, l5, l15;
    if (w.size() >= 3) {
      l1 = Parse<double>(w[0]);
      l5 = Parse<double>(w[1]);
      l15 = Parse<double>(w[2]);
    }
    if (l1 && l5 && l15) {
      loadavg = Json::array({*l1, *l5, *l15});
      if (cores && *l1 > kLoadPerCore * static_cast<double>(*cores)) {
        warnings->push_back(fmt::format(
            "1-minute load average {:.2f} on {} cores (above {} per core): other tasks, or "
            "loadbench's own work of the last minute, compete for the CPUs, so runs may wait "
            "for a core.",
            *l1, *cores, kLoadPerCore));
      }
    }
  }
  (*j)["loadavg"] = loadavg;
  (*j)["cores"] = OrNull(cores);
}

// "busy_processes": the busiest processes over the window other than `self` and its
// descendants, with a warning for each that took a large share of a CPU. khugepaged has a
// warning of its own: it is listed like any process but not warned about here, and its share
// goes to *khugepaged_cpu.
Json BusyProcesses(const Snapshot& procs0, const Snapshot& procs1, int self, double window_s,
                   std::optional<double>* khugepaged_cpu, std::vector<std::string>* warnings) {
  struct Busy {
    int pid;
    std::string comm;
    double cpu_percent;
  };
  std::optional<int> khugepaged_pid;
  std::vector<Busy> list;
  for (const auto& [pid, st] : procs1) {
    double pct = CpuPercent(DeltaTicks(procs0, pid, st), window_s);
    if (st.comm == "khugepaged") {
      khugepaged_pid = pid;
      *khugepaged_cpu = pct;
    }
    if (pct >= kListCpuPercent && !IsSelfOrDescendant(pid, self, procs0, procs1)) {
      list.push_back({pid, st.comm, pct});
    }
  }
  std::stable_sort(list.begin(), list.end(),
                   [](const Busy& a, const Busy& b) { return a.cpu_percent > b.cpu_percent; });
  if (list.size() > kMaxListed) list.resize(kMaxListed);
  Json busy = Json::array();
  for (const Busy& b : list) {
    busy.push_back(Json{{"pid", b.pid}, {"comm", b.comm}, {"cpu_percent", b.cpu_percent}});
    if (b.cpu_percent >= kBusyCpuPercent && b.pid != khugepaged_pid) {
      warnings->push_back(fmt::format(
          "Process {} ({}) used {:.0f}% of a CPU during the check: it competes with the runs "
          "for CPU time and memory bandwidth.",
          b.pid, b.comm, b.cpu_percent));
    }
  }
  return busy;
}

// The meminfo figures, with warnings for dirty pages, too little available memory and swap in
// use.
void CheckMemory(const StabilityOptions& o, Json* j, std::vector<std::string>* warnings) {
  const std::optional<std::string> meminfo = ReadFile(o.proc_dir + "/meminfo");
  auto dirty = ProcFieldIn(meminfo, "Dirty");
  auto writeback = ProcFieldIn(meminfo, "Writeback");
  auto available = ProcFieldIn(meminfo, "MemAvailable");
  auto total = ProcFieldIn(meminfo, "MemTotal");
  auto swap_total = ProcFieldIn(meminfo, "SwapTotal");
  auto swap_free = ProcFieldIn(meminfo, "SwapFree");
  auto swap_used = Delta(swap_free, swap_total);
  (*j)["dirty_bytes"] = OrNull(dirty);
  (*j)["writeback_bytes"] = OrNull(writeback);
  (*j)["mem_available_bytes"] = OrNull(available);
  (*j)["mem_total_bytes"] = OrNull(total);
  (*j)["swap_total_bytes"] = OrNull(swap_total);
  (*j)["swap_used_bytes"] = OrNull(swap_used);
  if (dirty && writeback && *dirty + *writeback > kDirtyBytes) {
    warnings->push_back(fmt::format(
        "{} of dirty and writeback pages (above {}): flushing them competes with the runs' "
        "reads, and something keeps writing (the harness wrote them back with `sync` before "
        "this check).",
        Size(*dirty + *writeback), Size(kDirtyBytes)));
  }
  const auto file_bytes = static_cast<int64_t>(o.file_bytes);
  if (available && o.file_bytes > 0 && *available < file_bytes) {
    warnings->push_back(fmt::format(
        "MemAvailable is {}, less than the {} file: a warm run cannot hold the file in the page "
        "cache, so it reads from disk.",
        Size(*available), Size(file_bytes)));
  } else if (available && *available < kLowAvailableBytes) {
    warnings->push_back(fmt::format(
        "MemAvailable is {} (below {}): the runs' buffers and page cache will force reclaim "
        "during the timed loads.",
        Size(*available), Size(kLowAvailableBytes)));
  }
  if (swap_used && *swap_used > 0) {
    warnings->push_back(fmt::format(
        "{} of swap is in use: memory has been short, and swapping during a run adds disk I/O "
        "and stalls to its time.",
        Size(*swap_used)));
  }
}

// "khugepaged": its counters and their change over the window, and its CPU share; a warning
// when it collapsed pages or was busy.
void CheckKhugepaged(const Samples& s, const std::optional<double>& khugepaged_cpu, Json* j,
                     std::vector<std::string>* warnings) {
  auto collapsed_delta = Delta(s.khuge0.pages_collapsed, s.khuge1.pages_collapsed);
  (*j)["khugepaged"] =
      Json{{"pages_collapsed", OrNull(s.khuge1.pages_collapsed)},
           {"full_scans", OrNull(s.khuge1.full_scans)},
           {"pages_collapsed_delta", OrNull(collapsed_delta)},
           {"full_scans_delta", OrNull(Delta(s.khuge0.full_scans, s.khuge1.full_scans))},
           {"cpu_percent", OrNull(khugepaged_cpu)}};
  const bool collapsing = collapsed_delta && *collapsed_delta > 0;
  const bool khuge_busy = khugepaged_cpu && *khugepaged_cpu >= kKhugepagedCpuPercent;
  if (collapsing || khuge_busy) {
    warnings->push_back(fmt::format(
        "khugepaged collapsed {} huge pages and used {} of a CPU during the check: it competes for "
        "memory bandwidth and changes what page faults cost.",
        collapsed_delta ? fmt::format("{}", *collapsed_delta) : "an unknown number of",
        khugepaged_cpu ? fmt::format("{:.0f}%", *khugepaged_cpu) : "an unknown share"));
  }
}

}  // namespace

Json SyncDirtyPages(const std::string& proc_dir) {
  const std::optional<std::string> meminfo = ReadFile(proc_dir + "/meminfo");
  const auto dirty = ProcFieldIn(meminfo, "Dirty");
  const auto writeback = ProcFieldIn(meminfo, "Writeback");
  if (!dirty || !writeback || *dirty + *writeback <= kDirtyBytes) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  ::sync();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {{"bytes", *dirty + *writeback}, {"seconds", seconds}};
}

Json CheckStability(const StabilityOptions& o) {
  const int self = o.self_pid != 0 ? o.self_pid : static_cast<int>(::getpid());
  const bool timed = o.window_s > 0;
  const Samples s = TakeSamples(o, timed);

  // The figures that need no window are read after it, closest to the runs they describe.
  std::vector<std::string> warnings;
  Json j;
  j["window_s"] = o.window_s;
  CheckLoad(o, &j, &warnings);
  std::optional<double> khugepaged_cpu;
  Json busy;
  if (s.procs0 && s.procs1 && timed) {
    busy = BusyProcesses(*s.procs0, *s.procs1, self, o.window_s, &khugepaged_cpu, &warnings);
  }
  j["busy_processes"] = busy;
  CheckMemory(o, &j, &warnings);
  CheckKhugepaged(s, khugepaged_cpu, &j, &warnings);
  j["warnings"] = warnings;
  return j;
}

}  // namespace loadbench
