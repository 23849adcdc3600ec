#include "harness/machine/stability.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/machine/busy.h"
#include "harness/machine/env.h"
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
// Other work of a quarter of a CPU or more makes a window busy: it steals whole time slices
// from a run on a machine of a few cores, and usually also uses memory bandwidth and caches.
constexpr double kBusyCpuPercent = 25.0;
// So many I/Os in flight on average, and the disk is someone else's: a cold run's reads would
// queue behind them.
constexpr double kBusyIoInFlight = 1.0;
// Runnable tasks and I/Os in flight are polled this often through a window.
constexpr double kPollS = 0.1;
// While it waits, the check says what is busy this often.
constexpr double kSayEveryS = 10.0;
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

// A window: processes and khugepaged's counters at its start and end, the CPUs' time, and the
// runnable tasks and I/Os in flight polled through it.
struct Samples {
  KhugepagedCounters khuge0, khuge1;
  std::optional<Snapshot> procs0, procs1;
  std::optional<CpuTimes> cpu0, cpu1;
  std::vector<int64_t> running, in_flight;
};

// Polls every kPollS through the window (once when it is not timed).
void PollThrough(const StabilityOptions& o, bool timed, Samples* s) {
  const int slices = timed ? std::max(1, static_cast<int>(std::lround(o.window_s / kPollS))) : 1;
  for (int i = 0; i < slices; ++i) {
    if (timed) std::this_thread::sleep_for(std::chrono::duration<double>(o.window_s / slices));
    if (auto r = ReadProcsRunning(o.proc_dir)) s->running.push_back(*r);
    if (auto f = ReadIoInFlight(o.proc_dir, o.sys_dir)) s->in_flight.push_back(*f);
  }
}

Samples TakeSamples(const StabilityOptions& o, bool timed) {
  Samples s;
  s.khuge0 = ReadKhugepaged(o.sys_dir);
  s.procs0 = SampleProcesses(o.proc_dir);
  s.cpu0 = ReadCpuTimes(o.proc_dir);
  PollThrough(o, timed, &s);
  if (o.between_samples) o.between_samples();
  s.cpu1 = ReadCpuTimes(o.proc_dir);
  s.procs1 = SampleProcesses(o.proc_dir);
  s.khuge1 = ReadKhugepaged(o.sys_dir);
  return s;
}

std::optional<double> Mean(const std::vector<int64_t>& v, int64_t less = 0) {
  if (v.empty()) return std::nullopt;
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(std::max<int64_t>(0, x - less));
  return std::round(sum / static_cast<double>(v.size()) * 10) / 10;
}

struct ProcessCpu {
  int pid;
  std::string comm;
  double cpu_percent;
};

// How the window's CPU time went by process: loadbench's own (self and its descendants) and
// the others', the busiest others listed, and khugepaged's share.
struct ProcessUse {
  std::vector<ProcessCpu> busiest;  // others of kListCpuPercent or more, busiest first
  uint64_t self_ticks = 0, other_ticks = 0;
  std::optional<double> khugepaged_cpu;
};

ProcessUse UseOf(const Snapshot& procs0, const Snapshot& procs1, int self, double window_s) {
  ProcessUse u;
  for (const auto& [pid, st] : procs1) {
    const uint64_t ticks = DeltaTicks(procs0, pid, st);
    const double pct = CpuPercent(ticks, window_s);
    if (st.comm == "khugepaged") u.khugepaged_cpu = pct;
    if (IsSelfOrDescendant(pid, self, procs0, procs1)) {
      u.self_ticks += ticks;
      continue;
    }
    u.other_ticks += ticks;
    if (pct >= kListCpuPercent) u.busiest.push_back({pid, st.comm, pct});
  }
  std::stable_sort(u.busiest.begin(), u.busiest.end(),
                   [](const ProcessCpu& a, const ProcessCpu& b) {
                     return a.cpu_percent > b.cpu_percent;
                   });
  if (u.busiest.size() > kMaxListed) u.busiest.resize(kMaxListed);
  return u;
}

// One window, judged: the other work's CPU share (of one CPU), runnable tasks besides the
// check's own, I/Os in flight, dirty and writeback pages; busy when any is high.
struct Window {
  Samples s;
  std::optional<ProcessUse> use;  // null when untimed or the processes cannot be listed
  std::optional<double> cpu_percent, runnable, io_in_flight;
  std::optional<int64_t> dirty_bytes;
  bool busy_cpu = false, busy_io = false, busy_dirty = false;
  bool quiet() const { return !busy_cpu && !busy_io && !busy_dirty; }
};

// Every CPU's busy time less loadbench's own, as a share of one CPU over the window; where
// /proc/stat cannot be read, the other processes' ticks alone.
std::optional<double> OthersCpu(const Window& w, std::optional<int64_t> cores, double window_s) {
  if (!w.use) return std::nullopt;
  const auto& c0 = w.s.cpu0;
  const auto& c1 = w.s.cpu1;
  if (!c0 || !c1 || !cores || c1->total <= c0->total || c1->busy < c0->busy) {
    return CpuPercent(w.use->other_ticks, window_s);
  }
  const double others = std::max(0.0, static_cast<double>(c1->busy - c0->busy) -
                                          static_cast<double>(w.use->self_ticks));
  const double per_cpu = static_cast<double>(c1->total - c0->total) / static_cast<double>(*cores);
  return std::round(others / per_cpu * 1000) / 10;
}

Window SampleWindow(const StabilityOptions& o, int self, std::optional<int64_t> cores) {
  const bool timed = o.window_s > 0;
  Window w;
  w.s = TakeSamples(o, timed);
  if (timed && w.s.procs0 && w.s.procs1) {
    w.use = UseOf(*w.s.procs0, *w.s.procs1, self, o.window_s);
  }
  w.cpu_percent = OthersCpu(w, cores, o.window_s);
  w.runnable = Mean(w.s.running, 1);  // the check itself is running when it reads
  w.io_in_flight = Mean(w.s.in_flight);
  const std::optional<std::string> meminfo = ReadFile(o.proc_dir + "/meminfo");
  const auto dirty = ProcFieldIn(meminfo, "Dirty");
  const auto writeback = ProcFieldIn(meminfo, "Writeback");
  if (dirty && writeback) w.dirty_bytes = *dirty + *writeback;
  w.busy_cpu = w.cpu_percent && *w.cpu_percent >= kBusyCpuPercent;
  w.busy_io = w.io_in_flight && *w.io_in_flight >= kBusyIoInFlight;
  w.busy_dirty = w.dirty_bytes && *w.dirty_bytes > kDirtyBytes;
  return w;
}

// The busiest other processes in words: "1234 (spin) 99%, 77 (cc1plus) 45%".
std::string Busiest(const ProcessUse& u) {
  std::vector<std::string> names;
  for (const ProcessCpu& p : u.busiest) {
    if (names.size() == 3) break;
    names.push_back(fmt::format("{} ({}) {:.0f}%", p.pid, p.comm, p.cpu_percent));
  }
  if (names.empty()) return "no single process stood out: kernel work or short-lived processes";
  return fmt::format("busiest: {}", fmt::join(names, ", "));
}

// What made a busy window busy, in a phrase.
std::string BusyText(const Window& w, double window_s) {
  std::vector<std::string> parts;
  if (w.busy_cpu) {
    parts.push_back(fmt::format("other work used {:.0f}% of a CPU over {:.1f} s ({})",
                                *w.cpu_percent, window_s, Busiest(*w.use)));
  }
  if (w.busy_io) {
    parts.push_back(
        fmt::format("{:.1f} I/Os were in flight at the disks on average", *w.io_in_flight));
  }
  if (w.busy_dirty) {
    parts.push_back(fmt::format("{} of dirty and writeback pages stayed in memory (above {}): "
                                "something keeps writing",
                                Size(*w.dirty_bytes), Size(kDirtyBytes)));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

// Windows until one is quiet or max_wait_s has passed; the last one, how long was waited before
// it, and what the first busy one saw.
Window WaitForQuiet(const StabilityOptions& o, int self, std::optional<int64_t> cores,
                    double* waited_s, Json* waited_for) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  double last_start = 0, said = -kSayEveryS;
  Window w = SampleWindow(o, self, cores);
  *waited_for = nullptr;
  while (!w.quiet() && o.window_s > 0 && since() < o.max_wait_s) {
    const std::string busy = BusyText(w, o.window_s);
    if (waited_for->is_null()) *waited_for = busy;
    if (o.on_wait && since() - said >= kSayEveryS) {
      said = since();
      o.on_wait(said, busy);
    }
    // Pages a writer that has stopped left dirty would sit until they expire (30 s); written
    // back now, as before the check, so that only a writer still at work keeps it waiting.
    if (w.busy_dirty) SyncDirtyPages(o.proc_dir);
    last_start = since();
    w = SampleWindow(o, self, cores);
  }
  *waited_s = std::round(last_start * 10) / 10;
  return w;
}

// "loadavg" and "cores": facts, not a verdict (the 1-minute figure lags by a minute).
void RecordLoad(const StabilityOptions& o, std::optional<int64_t> cores, Json* j) {
  Json loadavg;
  if (auto text = ReadFile(o.proc_dir + "/loadavg")) {
    auto w = Words(*text);
    std::optional<double> l1, l5, l15;
    if (w.size() >= 3) {
      l1 = Parse<double>(w[0]);
      l5 = Parse<double>(w[1]);
      l15 = Parse<double>(w[2]);
    }
    if (l1 && l5 && l15) loadavg = Json::array({*l1, *l5, *l15});
  }
  (*j)["loadavg"] = loadavg;
  (*j)["cores"] = OrNull(cores);
}

Json BusyProcessesJson(const std::optional<ProcessUse>& u) {
  if (!u) return nullptr;
  Json busy = Json::array();
  for (const ProcessCpu& b : u->busiest) {
    busy.push_back(Json{{"pid", b.pid}, {"comm", b.comm}, {"cpu_percent", b.cpu_percent}});
  }
  return busy;
}

// The meminfo figures, with warnings for too little available memory and swap in use (dirty
// pages are judged with the window, as work that may settle).
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

double DefaultWindowSeconds() {
  const char* v = std::getenv("LOADBENCH_SETTLE_WINDOW_S");
  if (v == nullptr || *v == '\0') return 0.5;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return *end == '\0' && s >= 0.05 && s <= 5 ? s : 0.5;
}

Json CheckStability(const StabilityOptions& o) {
  const int self = o.self_pid != 0 ? o.self_pid : static_cast<int>(::getpid());
  const std::optional<int64_t> cores = Cores(o.proc_dir);
  double waited_s = 0;
  Json waited_for;
  const Window w = WaitForQuiet(o, self, cores, &waited_s, &waited_for);

  // The figures that need no window are read after it, closest to the runs they describe.
  std::vector<std::string> warnings;
  Json j;
  j["window_s"] = o.window_s;
  j["max_wait_s"] = o.max_wait_s;
  j["waited_s"] = waited_s;
  j["settled"] = w.quiet();
  j["waited_for"] = waited_for;
  j["busy"] = Json{{"cpu_percent", OrNull(w.cpu_percent)},
                   {"runnable", OrNull(w.runnable)},
                   {"io_in_flight", OrNull(w.io_in_flight)}};
  if (!w.quiet()) {
    warnings.push_back(fmt::format(
        "The machine was still busy {}: {}. The runs share it with that work, so their times "
        "carry its noise.",
        waited_s > 0 ? fmt::format("after {:.0f} s of waiting", waited_s)
                     : "during the check (no wait was allowed)",
        BusyText(w, o.window_s)));
  }
  RecordLoad(o, cores, &j);
  j["busy_processes"] = BusyProcessesJson(w.use);
  CheckMemory(o, &j, &warnings);
  CheckKhugepaged(w.s, w.use ? w.use->khugepaged_cpu : std::nullopt, &j, &warnings);
  j["warnings"] = warnings;
  return j;
}

}  // namespace loadbench
