#include "harness/machine/tuning.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/machine/damon.h"
#include "harness/machine/env.h"
#include "harness/process/journal.h"
#include "loaders/base/file_io.h"
#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr const char* kOrderFile = "/module/page_reporting/parameters/page_reporting_order";
constexpr const char* kPerformance = "performance";
constexpr uint64_t kHugeBytes = uint64_t{2} << 20;  // a PMD's worth of 4 KiB pages

std::optional<std::string> Read(const std::string& path) {
  std::optional<std::string> s = ReadFile(path);
  if (!s) return std::nullopt;
  const size_t b = s->find_first_not_of(" \t\r\n"), e = s->find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s->substr(b, e - b + 1);
}

// "always [madvise] never" -> "madvise"; a file without brackets as it reads.
std::optional<std::string> ReadChoice(const std::string& path) {
  std::optional<std::string> s = Read(path);
  const size_t open = s ? s->find('[') : std::string::npos;
  const size_t close = open == std::string::npos ? open : s->find(']', open);
  if (close == std::string::npos) return s;
  return s->substr(open + 1, close - open - 1);
}

SystemSetting Setting(std::string name, std::string path, std::optional<std::string> value,
                      std::string note = "") {
  return {std::move(name), std::move(path), std::move(value), std::move(note)};
}

// The largest order of a free block (the buddy allocator's MAX_PAGE_ORDER): /proc/buddyinfo has
// one column per order from 0.
std::optional<int> LargestOrder(const SystemRoot& root) {
  std::istringstream in(ReadFile(root.proc + "/buddyinfo").value_or(""));
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t zone = line.find("zone");
  if (zone == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(zone + 4));
  std::string name, count;
  fields >> name;
  int columns = 0;
  while (fields >> count) ++columns;
  return columns > 0 ? std::optional<int>(columns - 1) : std::nullopt;
}

std::optional<long long> Number(const std::optional<std::string>& s) {
  if (!s || s->empty() || s->find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(*s);
}

// "on" (free blocks of page_reporting_order and up are reported), "off" (the order is above
// every free block's) or "absent" (no free page reporting in this kernel).
std::string PageReportingState(const SystemRoot& root) {
  const std::optional<long long> order = Number(Read(root.sys + kOrderFile));
  if (!order) return "absent";
  const std::optional<int> largest = LargestOrder(root);
  return largest && *order > *largest ? "off" : "on";
}

void ThpSettings(const SystemRoot& root, std::vector<SystemSetting>* out) {
  const std::string d = root.sys + "/kernel/mm/transparent_hugepage";
  out->push_back(Setting("thp.enabled", d + "/enabled", ReadChoice(d + "/enabled")));
  out->push_back(Setting("thp.defrag", d + "/defrag", ReadChoice(d + "/defrag")));
  out->push_back(
      Setting("thp.khugepaged_defrag", d + "/khugepaged/defrag", Read(d + "/khugepaged/defrag")));
}

// Bytes free in blocks of kHugeBytes and up, summed over every zone of /proc/buddyinfo (a line
// per zone: "Node 0, zone Normal", then the free blocks of each order from 0); nullopt when it
// cannot be read or a line is not of that shape.
std::optional<uint64_t> FreeHugeBlockBytes(const SystemRoot& root) {
  const std::optional<std::string> text = ReadFile(root.proc + "/buddyinfo");
  if (!text) return std::nullopt;
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::istringstream in(*text);
  uint64_t total = 0;
  bool any = false;
  for (std::string line; std::getline(in, line);) {
    const size_t zone = line.find("zone");
    if (zone == std::string::npos) continue;
    std::istringstream fields(line.substr(zone + 4));
    std::string name;
    fields >> name;
    uint64_t count = 0;
    for (int order = 0; order < 32 && fields >> count; ++order) {
      if ((page << order) >= kHugeBytes) total += count * (page << order);
    }
    if (!fields.eof()) return std::nullopt;  // a column that is no count
    any = true;
  }
  return any ? std::optional(total) : std::nullopt;
}

std::optional<std::string> Decimal(const std::optional<uint64_t>& v) {
  return v ? std::optional(std::to_string(*v)) : std::nullopt;
}

// Whether a huge page can be had now: figures the kernel keeps, read only (as page reporting's
// counters are), each with what it means or why there is none.
void HugePageSettings(const SystemRoot& root, std::vector<SystemSetting>* out) {
  const HugePageState h = ReadHugePageState(root);
  const std::string buddy = root.proc + "/buddyinfo";
  out->push_back(Setting(
      "thp.free_2mib_blocks_mib", buddy,
      h.free_2mib_blocks_bytes ? Decimal(*h.free_2mib_blocks_bytes >> 20) : std::nullopt,
      h.free_2mib_blocks_bytes
          ? "read only: MiB free in blocks of 2 MiB and up, over every zone: what THP faults "
            "can take now without compaction"
          : "read only: " + buddy + " cannot be read"));
  const std::string meminfo = root.proc + "/meminfo";
  const std::string pages =
      h.hugetlb_page_bytes ? fmt::format("pages of {} kB", *h.hugetlb_page_bytes >> 10) : "pages";
  const bool none = !h.hugetlb_total;
  out->push_back(Setting("hugetlb.total", meminfo, Decimal(h.hugetlb_total),
                         none ? "read only: no HugePages_Total in " + meminfo + ": no hugetlb here"
                              : fmt::format("read only: HugePages_Total, the hugetlb pool in {}, "
                                            "for hugetlbfs and MAP_HUGETLB, never for THP",
                                            pages)));
  out->push_back(Setting("hugetlb.free", meminfo, Decimal(h.hugetlb_free),
                         none ? "read only: no hugetlb here"
                              : "read only: HugePages_Free, the pool's pages not in use now"));
}

// Every parameter of free page reporting (some kernels add their own beside
// page_reporting_order), with what the order means here.
void PageReportingSettings(const SystemRoot& root, std::vector<SystemSetting>* out) {
  const std::string d = root.sys + "/module/page_reporting/parameters";
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(d, ec)) names.push_back(e.path().filename());
  if (ec || names.empty()) {
    out->push_back(
        Setting("page_reporting", d, std::nullopt, "this kernel has no free page reporting"));
    return;
  }
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    std::string note;
    if (n == "page_reporting_order") {
      const std::optional<int> largest = LargestOrder(root);
      note = PageReportingState(root) == "off"
                 ? fmt::format("off: above the largest free block order, {}", largest.value_or(-1))
                 : "on: free blocks of this order and up go back to the host";
    } else if (struct stat st{};
               ::stat((d + "/" + n).c_str(), &st) == 0 && (st.st_mode & 0222) == 0) {
      note = "read only: a counter, not a setting";
    }
    out->push_back(Setting("page_reporting." + n, d + "/" + n, Read(d + "/" + n), note));
  }
}

void VmSettings(const SystemRoot& root, std::vector<SystemSetting>* out) {
  for (const char* k :
       {"swappiness", "dirty_ratio", "dirty_background_ratio", "dirty_bytes",
        "dirty_background_bytes", "dirty_expire_centisecs", "dirty_writeback_centisecs"}) {
    const std::string path = root.proc + "/sys/vm/" + k;
    out->push_back(Setting(fmt::format("vm.{}", k), path, Read(path)));
  }
}

// The whole disk under `path` (or its nearest existing parent): its /sys/block folder, or why
// there is none.
std::string BlockFolder(const std::string& path, const SystemRoot& root, std::string* why) {
  fs::path p = fs::absolute(path.empty() ? "." : path);
  struct stat st {};
  while (::stat(p.c_str(), &st) != 0 && p.has_relative_path()) p = p.parent_path();
  std::error_code ec;
  fs::path sys =
      fs::canonical(fmt::format("{}/dev/block/{}:{}", root.sys, major(st.st_dev), minor(st.st_dev)),
                    ec);
  if (ec) {
    *why = fmt::format("{} is on no block device (device {}:{}: tmpfs, overlay, NFS, ...)",
                       p.string(), major(st.st_dev), minor(st.st_dev));
    return "";
  }
  if (fs::exists(sys / "partition", ec)) sys = sys.parent_path();
  return sys.string();
}

void BlockSettings(const std::string& data_path, const SystemRoot& root,
                   std::vector<SystemSetting>* out) {
  std::string why;
  const std::string d = BlockFolder(data_path, root, &why);
  const std::string note = d.empty() ? why : fmt::format("the device holding {}", data_path);
  out->push_back(Setting("block.device", d,
                         d.empty() ? std::nullopt : std::optional(fs::path(d).filename()), note));
  out->push_back(Setting("block.read_ahead_kb", d + "/queue/read_ahead_kb",
                         d.empty() ? std::nullopt : Read(d + "/queue/read_ahead_kb")));
  out->push_back(Setting("block.scheduler", d + "/queue/scheduler",
                         d.empty() ? std::nullopt : ReadChoice(d + "/queue/scheduler")));
}

// scaling_governor of every CPU that has one, by CPU number.
std::map<int, std::string> Governors(const SystemRoot& root) {
  std::map<int, std::string> out;
  std::error_code ec;
  static const std::regex cpu("cpu([0-9]+)");
  std::smatch m;
  for (const auto& e : fs::directory_iterator(root.sys + "/devices/system/cpu", ec)) {
    const std::string name = e.path().filename();
    if (!std::regex_match(name, m, cpu)) continue;
    if (auto g = Read(e.path() / "cpufreq/scaling_governor")) out[std::stoi(m[1])] = *g;
  }
  return out;
}

void CpuSettings(const SystemRoot& root, std::vector<SystemSetting>* out) {
  const std::string pattern = root.sys + "/devices/system/cpu/cpu*/cpufreq/scaling_governor";
  const std::map<int, std::string> g = Governors(root);
  if (g.empty()) {
    out->push_back(Setting("cpu.governor", pattern, std::nullopt,
                           "no CPU has cpufreq: no frequency driver, as in most VMs"));
    return;
  }
  std::map<std::string, std::vector<int>> by;
  for (const auto& [cpu, name] : g) by[name].push_back(cpu);
  std::vector<std::string> parts;
  for (const auto& [name, cpus] : by) {
    parts.push_back(by.size() == 1 ? name : fmt::format("{} (cpu {})", name, fmt::join(cpus, ",")));
  }
  out->push_back(Setting("cpu.governor", pattern, fmt::format("{}", fmt::join(parts, "; ")),
                         fmt::format("{} CPUs", g.size())));
}

// The virtio balloon's driver and its device features (virtio spec 5.5.3), bits 0 to 23.
void BalloonSettings(const SystemRoot& root, std::vector<SystemSetting>* out) {
  static const char* kBits[] = {"must_tell_host", "stats_vq",    "deflate_on_oom",
                                "free_page_hint", "page_poison", "page_reporting"};
  const std::string bus = root.sys + "/bus/virtio/devices";
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(bus, ec)) {
    if (Read(d.path() / "device") != "0x0005") continue;  // VIRTIO_ID_BALLOON
    const fs::path driver = fs::read_symlink(d.path() / "driver", ec);
    out->push_back(Setting("balloon.driver", d.path() / "driver",
                           ec ? "none" : driver.filename().string(),
                           ec ? "a balloon device without a driver" : ""));
    const std::optional<std::string> bits = Read(d.path() / "features");
    std::vector<std::string> names;
    for (size_t i = 0; bits && i < std::min<size_t>(bits->size(), 24); ++i) {
      if ((*bits)[i] == '1') names.push_back(i < 6 ? kBits[i] : fmt::format("bit{}", i));
    }
    out->push_back(
        Setting("balloon.features", d.path() / "features",
                bits ? std::optional(fmt::format("{}", fmt::join(names, " "))) : std::nullopt));
    return;
  }
  out->push_back(Setting("balloon.driver", bus, std::nullopt, "no virtio balloon device"));
}

// A line of a change's `why`, for page reporting.
std::string ReportingOnWhy(long long order, int largest) {
  return fmt::format("free page reporting is on (page_reporting_order {}, the largest free block "
                     "order {}): freed memory goes back to the host, and its next first touch "
                     "pays a host fault",
                     order, largest);
}

Status PlanPageReporting(PageReportingChoice c, const SystemRoot& root,
                         std::vector<SettingChange>* plan) {
  const std::string path = root.sys + kOrderFile;
  const std::optional<std::string> text = Read(path);
  if (!text) return Status::Ok();  // no free page reporting here: nothing to hold off
  const std::optional<long long> order = Number(text);
  const std::optional<int> largest = LargestOrder(root);
  if (!order || !largest) {
    return Status::BadInput(fmt::format("cannot tell whether free page reporting is on: {} reads "
                                        "'{}', {}/buddyinfo {}",
                                        path, *text, root.proc,
                                        largest ? "is fine" : "unreadable"));
  }
  if (c == PageReportingChoice::kKeep || *order > *largest) return Status::Ok();
  plan->push_back({path, *text, std::to_string(*largest + 1), ReportingOnWhy(*order, *largest)});
  return Status::Ok();
}

void PlanGovernors(const SystemRoot& root, std::vector<SettingChange>* plan) {
  for (const auto& [cpu, governor] : Governors(root)) {
    const std::string d = fmt::format("{}/devices/system/cpu/cpu{}/cpufreq/", root.sys, cpu);
    const std::string offered = Read(d + "scaling_available_governors").value_or("");
    std::istringstream words(offered);
    bool has = false;
    for (std::string w; words >> w;) has = has || w == kPerformance;
    if (governor == kPerformance || !has) continue;
    plan->push_back({d + "scaling_governor", governor, kPerformance,
                     fmt::format("cpu{}: frequency governor {}, not {}: the clock may ramp up "
                                 "during a load",
                                 cpu, governor, kPerformance)});
  }
}

// Writes `value` to `path` and reads it back.
Status WriteSetting(const std::string& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW));
  const std::string line = value + "\n";
  if (!fd.valid() || ::write(fd.get(), line.data(), line.size()) < 0) {
    const int err = errno;
    return Status::OfErrno(Status::Code::kIOError, fmt::format("cannot set {} to {}", path, value),
                           err, err == EACCES || err == EPERM ? " (it needs root)" : "");
  }
  fd.reset();
  const std::optional<std::string> now = Read(path);
  if (now != value && ReadChoice(path) != value) {
    return Status::BadInput(fmt::format("cannot set {} to {}: it reads {} after the write (the "
                                        "kernel holds it there)",
                                        path, value, now.value_or("nothing")));
  }
  return Status::Ok();
}

std::string JournalLine(const SettingChange& c) { return c.path + "\t" + c.before; }

}  // namespace

std::vector<SystemSetting> ReadSystemSettings(const std::string& data_path,
                                              const SystemRoot& root) {
  std::vector<SystemSetting> out;
  ThpSettings(root, &out);
  HugePageSettings(root, &out);
  PageReportingSettings(root, &out);
  VmSettings(root, &out);
  BlockSettings(data_path, root, &out);
  CpuSettings(root, &out);
  BalloonSettings(root, &out);
  DamonSettings(root, &out);
  return out;
}

HugePageState ReadHugePageState(const SystemRoot& root) {
  HugePageState h;
  h.free_2mib_blocks_bytes = FreeHugeBlockBytes(root);
  const std::map<std::string, uint64_t> mem =
      ParseProcFields(ReadFile(root.proc + "/meminfo").value_or(""));
  auto field = [&](const char* key) {
    const auto it = mem.find(key);
    return it == mem.end() ? std::nullopt : std::optional(it->second);
  };
  h.hugetlb_total = field("HugePages_Total");
  h.hugetlb_free = field("HugePages_Free");
  h.hugetlb_page_bytes = field("Hugepagesize");  // kB in the file, bytes here
  return h;
}

std::string DescribeHugePages(const HugePageState& h) {
  auto text = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("unknown");
  };
  const std::string free = h.free_2mib_blocks_bytes
                               ? fmt::format("{} MiB", *h.free_2mib_blocks_bytes >> 20)
                               : std::string("unknown");
  return fmt::format("{} free in blocks of 2 MiB and up; hugetlb: {} of {} pages{} free", free,
                     text(h.hugetlb_free), text(h.hugetlb_total),
                     h.hugetlb_page_bytes ? fmt::format(" of {} kB", *h.hugetlb_page_bytes >> 10)
                                          : "");
}

Status ParsePageReportingChoice(const std::string& text, const std::string& what,
                                PageReportingChoice* out) {
  if (text == "off" || text == "keep") {
    *out = text == "off" ? PageReportingChoice::kOff : PageReportingChoice::kKeep;
    return Status::Ok();
  }
  return Status::BadInput(fmt::format("{} must be \"off\" or \"keep\", not \"{}\"", what, text));
}

const char* PageReportingChoiceName(PageReportingChoice c) {
  return c == PageReportingChoice::kOff ? "off" : "keep";
}

Status PlanTune(PageReportingChoice c, const SystemRoot& root, std::vector<SettingChange>* plan) {
  plan->clear();
  LB_RETURN_IF_ERROR(PlanPageReporting(c, root, plan));
  PlanGovernors(root, plan);
  PlanDamon(root, plan);
  return Status::Ok();
}

Status TuneSystem(PageReportingChoice c, const SystemRoot& root, std::vector<SettingChange>* done) {
  done->clear();
  std::vector<SettingChange> plan;
  LB_RETURN_IF_ERROR(PlanTune(c, root, &plan));
  for (const SettingChange& change : plan) {
    TrackLeftover(Leftover::kSetting, JournalLine(change));
    Status s = WriteSetting(change.path, change.after);
    if (s.ok()) {
      done->push_back(change);
      continue;
    }
    // A write the kernel refused left the value alone; one it took and changed is undone too.
    if (Read(change.path) == change.before) {
      UntrackLeftover(Leftover::kSetting, JournalLine(change));
    } else {
      done->push_back(change);
    }
    std::vector<std::string> said;
    const Status undo = RestoreSystem(*done, &said);
    done->clear();
    if (!undo.ok()) {
      return Status::IOError(
          fmt::format("{}; and restoring what was set failed: {}", s.message(), undo.message()));
    }
    return Status::IOError(s.message() + "; nothing was changed");
  }
  return Status::Ok();
}

Status RestoreSystem(const std::vector<SettingChange>& changes, std::vector<std::string>* said) {
  Status first = Status::Ok();
  for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
    Status s = WriteSetting(it->path, it->before);
    if (s.ok()) {
      UntrackLeftover(Leftover::kSetting, JournalLine(*it));
      said->push_back(fmt::format("{}: {} -> {}", it->path, it->after, it->before));
    } else if (first.ok()) {
      first = s;
    }
  }
  return first;
}

void ForgetChanges(const std::vector<SettingChange>& changes) {
  for (const SettingChange& c : changes) UntrackLeftover(Leftover::kSetting, JournalLine(c));
}

bool IsTunableSetting(const std::string& path, const std::string& value) {
  static const std::regex governor("/sys/devices/system/cpu/cpu[0-9]+/cpufreq/scaling_governor");
  static const std::regex word("[a-z0-9_]{1,32}");
  if (IsDamonSetting(path, value)) return true;
  return (path == std::string("/sys") + kOrderFile || std::regex_match(path, governor)) &&
         std::regex_match(value, word);
}

Status WriteTunableSetting(const std::string& path, const std::string& value) {
  if (!IsTunableSetting(path, value)) {
    return Status::BadInput(fmt::format("{} = '{}' is no setting tune writes", path, value));
  }
  return WriteSetting(path, value);
}

Json SystemEnv(const std::string& data_path, const TuneRecord* tune, const SystemRoot& root) {
  Json settings = Json::object();
  for (const SystemSetting& s : ReadSystemSettings(data_path, root)) {
    Json one = {{"path", s.path}, {"value", s.value ? Json(*s.value) : Json()}};
    if (!s.note.empty()) one["note"] = s.note;
    settings[s.name] = std::move(one);
  }
  Json j = {{"settings", settings},
            {"page_reporting", PageReportingState(root)},
            {"damon_pageout", DamonPageoutState(root)}};
  if (tune != nullptr) {
    Json changed = Json::array();
    for (const SettingChange& c : tune->changes) {
      changed.push_back({{"path", c.path}, {"before", c.before}, {"after", c.after}});
    }
    j["tune"] = {{"by", tune->by},
                 {"since", tune->since},
                 {"page_reporting", PageReportingChoiceName(tune->page_reporting)},
                 {"changed", changed}};
  } else {
    j["tune"] = nullptr;
  }
  std::vector<SettingChange> left;
  const Status s = PlanTune(tune ? tune->page_reporting : PageReportingChoice::kOff, root, &left);
  Json why = Json::array();
  if (!s.ok()) why.push_back(s.message());
  for (const SettingChange& c : left) why.push_back(c.why);
  j["tuned"] = why.empty();
  j["not_tuned_because"] = why;
  return j;
}

}  // namespace loadbench
