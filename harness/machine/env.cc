#include "harness/machine/env.h"
#include "loadbench_commit.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "harness/machine/tune_state.h"
#include "loaders/base/proc_fields.h"
#include "loaders/cuda/gpu.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// Strings are stored as read (file names and sysfs strings are bytes); env.json is written with
// nlohmann's replace handler, so bytes that are not UTF-8 become U+FFFD there.
Json Str(const std::optional<std::string>& s) { return s ? Json(*s) : Json(nullptr); }
template <typename T>
Json Opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The file's content, trimmed; nullopt when unreadable or empty.
std::optional<std::string> ReadTrimmed(const std::string& path) {
  auto s = ReadFile(path);
  if (!s) return std::nullopt;
  std::string t = Trim(*s);
  if (t.empty()) return std::nullopt;
  return t;
}

std::optional<int64_t> ParseInt(const std::string& s) {
  std::string t = Trim(s);
  if (t.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || end == t.c_str() || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> ReadInt(const std::string& path) {
  auto s = ReadTrimmed(path);
  return s ? ParseInt(*s) : std::nullopt;
}

// "always [madvise] never" -> "madvise". A file with one word and no brackets ("none", as
// queue/scheduler reads on a device without schedulers) is that word.
std::optional<std::string> ReadBracketed(const std::string& path) {
  auto s = ReadTrimmed(path);
  if (!s) return std::nullopt;
  size_t open = s->find('[');
  size_t close = s->find(']', open == std::string::npos ? 0 : open);
  if (open != std::string::npos && close != std::string::npos) {
    return s->substr(open + 1, close - open - 1);
  }
  if (s->find_first_of(" \t") == std::string::npos) return s;
  return std::nullopt;
}

// Value of "key: value" lines (/proc/cpuinfo, /proc/meminfo); first match.
std::optional<std::string> KeyValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (Trim(line.substr(0, colon)) == key) return Trim(line.substr(colon + 1));
  }
  return std::nullopt;
}

std::string Compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "g++ " __VERSION__;
#else
  return "unknown";
#endif
}

Json Build() {
  Json b;
#if defined(__OPTIMIZE__)
  b["optimized"] = true;
#else
  b["optimized"] = false;
#endif
#if defined(NDEBUG)
  b["assertions"] = false;
#else
  b["assertions"] = true;
#endif
  bool asan = false;
#if defined(__SANITIZE_ADDRESS__)
  asan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  asan = true;
#endif
#endif
  b["address_sanitizer"] = asan;
  return b;
}

Json Host(const std::optional<std::string>& cpuinfo, const std::optional<std::string>& meminfo) {
  Json h;
  char name[HOST_NAME_MAX + 1] = {};
  h["hostname"] = ::gethostname(name, sizeof(name) - 1) == 0 ? Json(name) : Json();
  h["cpu_model"] = cpuinfo ? Str(KeyValue(*cpuinfo, "model name")) : Json();
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  h["cores"] = cores > 0 ? Json(cores) : Json();
  cpu_set_t set;
  CPU_ZERO(&set);
  h["cores_allowed"] =
      ::sched_getaffinity(0, sizeof(set), &set) == 0 ? Json(CPU_COUNT(&set)) : Json();
  h["memory_bytes"] = Opt(ProcFieldIn(meminfo, "MemTotal"));
  long page = ::sysconf(_SC_PAGESIZE);
  h["page_size"] = page > 0 ? Json(page) : Json();
  return h;
}

Json Kernel() {
  Json k;
  struct utsname u {};
  bool ok = ::uname(&u) == 0;
  k["release"] = ok ? Json(u.release) : Json();
  k["version"] = ok ? Json(u.version) : Json();
  k["machine"] = ok ? Json(u.machine) : Json();
  return k;
}

// Whether a virtio balloon device hands the guest's free memory back to the host (feature bit
// 5, VIRTIO_BALLOON_F_REPORTING): memory freed and left alone then costs a host fault at its
// next first touch. Null without a balloon device.
std::optional<bool> BalloonFreePageReporting() {
  std::error_code ec;
  for (const auto& d : fs::directory_iterator("/sys/bus/virtio/devices", ec)) {
    if (ReadTrimmed(d.path() / "device") != "0x0005") continue;  // VIRTIO_ID_BALLOON
    const std::optional<std::string> bits = ReadTrimmed(d.path() / "features");
    if (bits && bits->size() > 5) return (*bits)[5] == '1';
  }
  return std::nullopt;
}

Json Virtualization(const std::optional<std::string>& cpuinfo) {
  Json v;
  // The "hypervisor" CPU flag exists on x86 only: without a flags line it is unknown (null).
  std::optional<bool> flag;
  if (cpuinfo) {
    if (auto flags = KeyValue(*cpuinfo, "flags")) {
      std::istringstream in(*flags);
      std::string f;
      flag = false;
      while (in >> f) {
        if (f == "hypervisor") flag = true;
      }
    }
  }
  v["hypervisor_flag"] = Opt(flag);
  v["sys_vendor"] = Str(ReadTrimmed("/sys/class/dmi/id/sys_vendor"));
  v["product_name"] = Str(ReadTrimmed("/sys/class/dmi/id/product_name"));
  v["free_page_reporting"] = Opt(BalloonFreePageReporting());
  // The smallest free block reported, as a page order (9: 2 MiB).
  v["page_reporting_order"] =
      Opt(ReadInt("/sys/module/page_reporting/parameters/page_reporting_order"));
  return v;
}

Json NullStorage() {
  Json s;
  for (const char* k : {"device", "partition", "model", "driver", "rotational", "scheduler",
                        "read_ahead_kb", "max_sectors_kb", "logical_block_size",
                        "physical_block_size", "nr_requests", "size_bytes"}) {
    s[k] = nullptr;
  }
  return s;
}

// The whole disk under the block device `dev` (a partition resolves to its parent).
Json Storage(const std::optional<dev_t>& dev) {
  Json s = NullStorage();
  if (!dev) return s;
  std::error_code ec;
  fs::path sys = fs::canonical(fmt::format("/sys/dev/block/{}:{}", major(*dev), minor(*dev)), ec);
  if (ec) return s;  // not a block device: tmpfs, overlay, NFS, btrfs subvolume ids, ...
  if (fs::exists(sys / "partition", ec)) {
    s["partition"] = sys.filename().string();
    sys = sys.parent_path();
  }
  const std::string d = sys.string();
  s["device"] = sys.filename().string();
  s["model"] = Str(ReadTrimmed(d + "/device/model"));
  fs::path driver = fs::read_symlink(sys / "device" / "driver", ec);
  s["driver"] = ec ? Json() : Json(driver.filename().string());
  auto rot = ReadInt(d + "/queue/rotational");
  s["rotational"] = rot ? Json(*rot != 0) : Json();
  s["scheduler"] = Str(ReadBracketed(d + "/queue/scheduler"));
  s["read_ahead_kb"] = Opt(ReadInt(d + "/queue/read_ahead_kb"));
  s["max_sectors_kb"] = Opt(ReadInt(d + "/queue/max_sectors_kb"));
  s["logical_block_size"] = Opt(ReadInt(d + "/queue/logical_block_size"));
  s["physical_block_size"] = Opt(ReadInt(d + "/queue/physical_block_size"));
  s["nr_requests"] = Opt(ReadInt(d + "/queue/nr_requests"));
  auto sectors = ReadInt(d + "/size");  // always in 512-byte units, whatever the block size
  s["size_bytes"] = sectors ? Json(*sectors * 512) : Json();
  return s;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct MountEntry {
  std::string mount_point, options, type, source, super_options;
};

// The mountinfo entry for device `dev` whose mount point is the longest prefix of `path`
// (bind mounts list one device several times); the last entry for `dev` if none is a prefix.
std::optional<MountEntry> FindMount(dev_t dev, const std::string& path) {
  auto text = ReadFile("/proc/self/mountinfo");
  if (!text) return std::nullopt;
  const std::string want = fmt::format("{}:{}", major(dev), minor(dev));
  std::optional<MountEntry> best;
  size_t best_len = 0;
  bool best_is_prefix = false;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> fields;
    std::string w;
    while (f >> w) fields.push_back(w);
    // id parent maj:min root mount_point options [optional...] - type source super_options
    size_t dash = 0;
    for (size_t i = 6; i < fields.size(); ++i) {
      if (fields[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || fields.size() < dash + 3 || fields[2] != want) continue;
    MountEntry e{Unescape(fields[4]), fields[5], fields[dash + 1], Unescape(fields[dash + 2]),
                 dash + 3 < fields.size() ? fields[dash + 3] : std::string()};
    const std::string& mp = e.mount_point;
    bool prefix = path.compare(0, mp.size(), mp) == 0 &&
                  (mp == "/" || path.size() == mp.size() || path[mp.size()] == '/');
    if (prefix && (!best_is_prefix || mp.size() >= best_len)) {
      best = e;
      best_len = mp.size();
      best_is_prefix = true;
    } else if (!prefix && !best_is_prefix) {
      best = e;
    }
  }
  return best;
}

std::optional<std::string> StatfsType(const std::string& path) {
  struct statfs sf {};
  if (::statfs(path.c_str(), &sf) != 0) return std::nullopt;
  switch (static_cast<uint64_t>(sf.f_type)) {
    case 0xEF53:
      return "ext4";  // also ext2/ext3: they share the magic
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlay";
    case 0x6969:
      return "nfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0xF2F52010:
      return "f2fs";
    default:
      return std::nullopt;
  }
}

Json Filesystem(const std::string& file_path, const std::optional<dev_t>& dev) {
  Json f;
  for (const char* k : {"type", "mount_point", "source", "mount_options", "super_options",
                        "block_size", "total_bytes", "free_bytes", "available_bytes"}) {
    f[k] = nullptr;
  }
  if (!dev) return f;
  std::error_code ec;
  fs::path real = fs::canonical(file_path, ec);
  std::string resolved = ec ? file_path : real.string();
  if (auto m = FindMount(*dev, resolved)) {
    f["type"] = m->type;
    f["mount_point"] = m->mount_point;
    f["source"] = m->source;
    f["mount_options"] = m->options;
    f["super_options"] = m->super_options.empty() ? Json() : Json(m->super_options);
  } else {
    f["type"] = Str(StatfsType(file_path));
  }
  struct statvfs sv {};
  if (::statvfs(file_path.c_str(), &sv) == 0) {
    uint64_t unit = sv.f_frsize != 0 ? sv.f_frsize : sv.f_bsize;
    f["block_size"] = static_cast<uint64_t>(sv.f_bsize);
    f["total_bytes"] = static_cast<uint64_t>(sv.f_blocks) * unit;
    f["free_bytes"] = static_cast<uint64_t>(sv.f_bfree) * unit;        // including root's reserve
    f["available_bytes"] = static_cast<uint64_t>(sv.f_bavail) * unit;  // to unprivileged users
  }
  return f;
}

Json Thp() {
  const std::string d = "/sys/kernel/mm/transparent_hugepage/";
  Json t;
  t["enabled"] = Str(ReadBracketed(d + "enabled"));
  t["defrag"] = Str(ReadBracketed(d + "defrag"));
  t["shmem_enabled"] = Str(ReadBracketed(d + "shmem_enabled"));
  t["hpage_pmd_size"] = Opt(ReadInt(d + "hpage_pmd_size"));
  // Whether a huge page could be had when env.json was written (system show lists them too).
  const HugePageState h = ReadHugePageState();
  t["free_2mib_blocks_mib"] =
      h.free_2mib_blocks_bytes ? Json(*h.free_2mib_blocks_bytes >> 20) : Json();
  t["hugetlb_total"] = Opt(h.hugetlb_total);
  t["hugetlb_free"] = Opt(h.hugetlb_free);
  t["hugetlb_page_bytes"] = Opt(h.hugetlb_page_bytes);
  return t;
}

Json Memory(const std::optional<std::string>& meminfo) {
  Json m;
  m["available_bytes"] = Opt(ProcFieldIn(meminfo, "MemAvailable"));
  m["cached_bytes"] = Opt(ProcFieldIn(meminfo, "Cached"));
  m["swap_total_bytes"] = Opt(ProcFieldIn(meminfo, "SwapTotal"));
  return m;
}

Json Cgroup() {
  auto text = ReadFile("/proc/self/cgroup");
  if (!text) return nullptr;
  Json lines = Json::array();
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

Json TimeUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (now == static_cast<std::time_t>(-1) || ::gmtime_r(&now, &tm) == nullptr) return nullptr;
  char buf[32];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return n == 0 ? Json() : Json(std::string(buf, n));
}

Json RlimitValue(rlim_t v) {
  return v == RLIM_INFINITY ? Json("unlimited") : Json(static_cast<uint64_t>(v));
}

// Limits and switches that decide what a run may do: drop the page cache, pin memory, use
// io_uring, count hardware events.
Json Limits() {
  Json l;
  l["drop_caches_writable"] = ::access("/proc/sys/vm/drop_caches", W_OK) == 0;
  struct rlimit rl {};
  const bool memlock = ::getrlimit(RLIMIT_MEMLOCK, &rl) == 0;
  l["memlock_soft_bytes"] = memlock ? RlimitValue(rl.rlim_cur) : Json();
  l["memlock_hard_bytes"] = memlock ? RlimitValue(rl.rlim_max) : Json();
  // Absent before Linux 6.6, where io_uring cannot be switched off this way: null.
  l["io_uring_disabled"] = Opt(ReadInt("/proc/sys/kernel/io_uring_disabled"));
  l["perf_event_paranoid"] = Opt(ReadInt("/proc/sys/kernel/perf_event_paranoid"));
  return l;
}

}  // namespace

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

nlohmann::ordered_json SystemEnvNow(const std::string& file_path, const TuneRecord* own) {
  TuneRecord saved;
  bool found = false;
  const bool read = own == nullptr && LoadTuneState(&saved, &found).ok();
  return SystemEnv(file_path, own != nullptr ? own : read && found ? &saved : nullptr);
}

nlohmann::ordered_json CollectEnv(const std::string& file_path) {
  const auto cpuinfo = ReadFile("/proc/cpuinfo");
  const auto meminfo = ReadFile("/proc/meminfo");
  std::optional<dev_t> dev;
  struct stat st {};
  if (!file_path.empty() && ::stat(file_path.c_str(), &st) == 0) dev = st.st_dev;

  Json env;
  env["loadbench"] = {{"version", LOADBENCH_VERSION}, {"commit", LOADBENCH_COMMIT}};
  env["compiler"] = Compiler();
  env["build"] = Build();
  env["time_utc"] = TimeUtc();
  env["host"] = Host(cpuinfo, meminfo);
  env["kernel"] = Kernel();
  env["virtualization"] = Virtualization(cpuinfo);
  env["file_path"] = file_path;
  env["storage"] = Storage(dev);
  env["filesystem"] = Filesystem(file_path, dev);
  env["thp"] = Thp();
  env["memory"] = Memory(meminfo);
  env["page_cache"] = {{"residency_method", ResidencyMethod()}};
  env["root"] = ::geteuid() == 0;
  env["cgroup"] = Cgroup();
  env["limits"] = Limits();
  env["system"] = SystemEnvNow(file_path, nullptr);
  // The GPU the CUDA strategies would use, or why there is none (not built, no driver, none).
  const std::string no_gpu = gpu::UnsupportedReason();
  env["gpu"] = no_gpu.empty() ? Json{{"available", true}, {"device", gpu::Info()}}
                              : Json{{"available", false}, {"reason", no_gpu}};
  return env;
}

}  // namespace loadbench
