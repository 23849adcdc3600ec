// The probe command and its cache: runs the measurements of harness/probe/probe_measure.h in order,
// on a scratch file that never outlives the process, and records them beside the facts that
// shape every result.
#include "harness/probe/probe.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "harness/leftovers/leftovers.h"
#include "harness/machine/env.h"
#include "harness/probe/probe_command.h"
#include "harness/probe/probe_measure.h"
#include "harness/probe/read_recipes.h"
#include "harness/process/interrupt.h"
#include "harness/record/results.h"
#include "loaders/base/file_io.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;
using probe::kBlockBytes;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// Free space the scratch file must leave on its filesystem.
constexpr uint64_t kHeadroomBytes = 64 * kMiB;
constexpr int kDeviceReps = 3;
constexpr int kMemcpyReps = 5;
constexpr int kFaultReps = 5;
constexpr int kQuickFaultReps = 3;
// The first touches of a 4 KiB and of a 2 MiB page, in the full probe and the quick one alike:
// enough repetitions for a median and a spread.
constexpr int kTouchReps = 7;
constexpr int kFillReps = 5;

// The full probe's memory-side sizes: memcpy and fill buffers well past any last-level cache,
// and enough faults that the clock's resolution does not matter. The quick probe's stay under
// about 1 s even where a 4 KiB fault costs 20 us: its fill buffer (64 MiB, past a 32 MiB L3)
// is faulted in once, and its 4 KiB first touches are 7 of 8 MiB (2048 faults each).
struct MemorySizes {
  uint64_t memcpy_bytes, fill_bytes, anon_bytes, thp_bytes;
};
constexpr MemorySizes kFullSizes{256 * kMiB, 256 * kMiB, 64 * kMiB, 256 * kMiB};
constexpr MemorySizes kQuickSizes{32 * kMiB, 64 * kMiB, 8 * kMiB, 64 * kMiB};
constexpr uint64_t kQuickFileBytes = 16 * kMiB;
constexpr uint64_t kFirstTouchBytes = 256 * kMiB;  // each first-touch measurement's memory

constexpr const char* kRunProbe = "run `loadbench probe` (make probe) to measure it";

std::string FirstLine(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string BootId() { return FirstLine("/proc/sys/kernel/random/boot_id"); }

// "major:minor" of the filesystem holding `path`, or "" when it cannot be stat'ed.
std::string DeviceOf(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev));
}

std::string UtcStamp(std::time_t t, const char* format) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

Json Opt(const std::optional<bool>& v) { return v ? Json(*v) : Json(); }

// The settings that shape results, repeated from env.json so that the probe (and its cache)
// stands on its own.
Json Facts(const Json& env) {
  auto at = [&](const char* pointer) {
    const Json::json_pointer p(pointer);
    return env.contains(p) ? env[p] : Json();
  };
  return {{"kernel", at("/kernel/release")},
          {"thp_enabled", at("/thp/enabled")},
          {"thp_defrag", at("/thp/defrag")},
          {"device", at("/storage/device")},
          {"device_model", at("/storage/model")},
          {"rotational", at("/storage/rotational")},
          {"scheduler", at("/storage/scheduler")},
          {"read_ahead_kb", at("/storage/read_ahead_kb")},
          {"filesystem", at("/filesystem/type")},
          {"mount_point", at("/filesystem/mount_point")},
          {"mount_options", at("/filesystem/mount_options")},
          {"super_options", at("/filesystem/super_options")},
          {"drop_caches_writable", at("/limits/drop_caches_writable")},
          {"memlock_soft_bytes", at("/limits/memlock_soft_bytes")},
          {"memlock_hard_bytes", at("/limits/memlock_hard_bytes")},
          {"io_uring_disabled", at("/limits/io_uring_disabled")},
          {"perf_event_paranoid", at("/limits/perf_event_paranoid")},
          {"virtual_machine", at("/virtualization/hypervisor_flag")},
          {"vm_product", at("/virtualization/product_name")},
          {"free_page_reporting", Opt(probe::FreePageReporting())},
          // The machine's state the probe ran in: its first touches depend on it.
          {"tuned", at("/system/tuned")},
          {"page_reporting", at("/system/page_reporting")},
          {"damon_pageout", at("/system/damon_pageout")},
          {"root", at("/root")}};
}

// Every ceiling's key, in print order; each is filled in as it is measured.
Json Ceilings() {
  Json c = Json::object();
  for (const CeilingSpec& spec : kCeilings) c[spec.key] = nullptr;
  return c;
}

Json NewProbe(const char* kind, const std::string& dir, uint64_t bytes) {
  const std::time_t now = std::time(nullptr);
  return {{"kind", kind},
          {"time_utc", UtcStamp(now, "%Y-%m-%dT%H:%M:%SZ")},
          {"time_unix", static_cast<int64_t>(now)},
          {"boot_id", BootId()},
          {"wall_s", nullptr},
          {"scratch", {{"dir", dir}, {"device", DeviceOf(dir)}, {"bytes", bytes}}},
          {"ceilings", Ceilings()},
          {"facts", nullptr}};
}

std::string Text(const Json& v) {
  if (v.is_null()) return "?";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.dump();
}

// " (text)", or nothing for a value that is not known.
std::string Aside(const Json& v) { return v.is_null() ? "" : " (" + Text(v) + ")"; }

std::string Memlock(const Json& v) {
  return v.is_number_unsigned() ? FormatBytes(v.get<uint64_t>()) : Text(v);
}

// "median of 7, spread 0.52 to 0.81": of how many repetitions a fault cost or fill rate is the
// median (of THP's, those that got a huge page), and the least and the most of them.
std::string MedianAndSpread(const Json& m, const char* spread_key) {
  std::string of = Text(m.value("reps", Json()));
  if (m.value("reps_left_out", 0) > 0) {
    of = fmt::format("{} of {} ({} without a huge page left out)", Text(m["reps_in_median"]), of,
                     Text(m["reps_left_out"]));
  }
  const Json& s = m.value(spread_key, Json());
  if (!s.is_array() || s.size() != 2) return "median of " + of;
  return fmt::format("median of {}, spread {:.2f} to {:.2f}", of, s[0].get<double>(),
                     s[1].get<double>());
}

// The figure of ceiling `c`, with a few words on how it was chosen, or why there is none.
std::string Result(const CeilingSpec& c, const Json& m) {
  const Json& f = m.contains(c.figure) ? m[c.figure] : Json();
  if (!f.is_number()) {
    return fmt::format("{:>9}  {:<9} {}", "n/a", "", Text(m.value("reason", Json())));
  }
  std::string how;
  if (m.contains("recipes")) {
    how = fmt::format("{} ({})", Text(m["recipe"]), Text(m["chosen"]));
  } else if (m.contains("seconds")) {
    how = fmt::format("{:.2f} s, one pass", m["seconds"].get<double>());
  } else if (m.contains("spread_gb_per_s")) {
    how = MedianAndSpread(m, "spread_gb_per_s");
  } else if (m.contains("median_gb_per_s")) {
    how = fmt::format("{}, median {:.2f}", Text(m["chosen"]), m["median_gb_per_s"].get<double>());
  } else if (std::string(c.key) == "thp_fault") {
    how = fmt::format("{}; {:.2f} GB/s, {:.0f}% granted", MedianAndSpread(m, "spread_us"),
                      m["gb_per_s"].get<double>(), m["granted_fraction"].get<double>() * 100);
  } else if (std::string(c.key) == "file_minor_fault") {
    how = fmt::format("{:.3f} us per 4 KiB page, {:.0f} pages per fault",
                      m["us_per_page"].get<double>(), m["pages_per_fault"].get<double>());
  } else if (m.contains("first_faults")) {
    how = fmt::format("populate {:.2f} s/GiB, then first {:.2f}, second {:.3f}; {} faults in the "
                      "first pass",
                      m["populate_s_per_gib"].get<double>(), m["first_s_per_gib"].get<double>(),
                      m["second_s_per_gib"].get<double>(), Text(m["first_faults"]));
  } else if (m.contains("faults")) {
    how = fmt::format("{}; {} faults counted", MedianAndSpread(m, "spread_us"), Text(m["faults"]));
  }
  return fmt::format("{:>9.2f}  {:<9} {}", f.get<double>(), c.unit, how);
}

std::string Table(const Json& probe) {
  std::string out = fmt::format("{:<46} {:>9}  {:<9} {}\n", "ceiling", "value", "unit", "how");
  for (const CeilingSpec& c : kCeilings) {
    out += fmt::format("{:<46} {}\n", c.label, Result(c, probe["ceilings"][c.key]));
  }
  const Json& f = probe["facts"];
  out += "\nfacts\n";
  auto line = [&](const char* name, const std::string& value) {
    out += fmt::format("  {:<20} {}\n", name, value);
  };
  line("kernel", Text(f["kernel"]));
  line("THP",
       fmt::format("enabled [{}], defrag [{}]", Text(f["thp_enabled"]), Text(f["thp_defrag"])));
  line("device", fmt::format("{}{}, scheduler {}, read_ahead_kb {}, rotational {}",
                             Text(f["device"]), Aside(f["device_model"]), Text(f["scheduler"]),
                             Text(f["read_ahead_kb"]), Text(f["rotational"])));
  line("filesystem", fmt::format("{} on {} ({}; {})", Text(f["filesystem"]), Text(f["mount_point"]),
                                 Text(f["mount_options"]), Text(f["super_options"])));
  line("drop_caches", f["drop_caches_writable"] == true ? "writable" : "not writable");
  line("RLIMIT_MEMLOCK", fmt::format("soft {}, hard {}", Memlock(f["memlock_soft_bytes"]),
                                     Memlock(f["memlock_hard_bytes"])));
  line("io_uring_disabled", Text(f["io_uring_disabled"]));
  line("perf_event_paranoid", Text(f["perf_event_paranoid"]));
  line("virtual machine", Text(f["virtual_machine"]) + Aside(f["vm_product"]));
  line("free page reporting",
       Text(f["free_page_reporting"]) + (f["free_page_reporting"] == true
                                             ? " (freed guest memory goes back to the host: first "
                                               "touches of it pay host faults)"
                                             : ""));
  line("root", Text(f["root"]));
  return out;
}

struct Step {
  const char* key;  // in kCeilings
  std::string what;
  std::function<Json()> run;
};

const CeilingSpec& Spec(const std::string& key) {
  for (const CeilingSpec& c : kCeilings) {
    if (key == c.key) return c;
  }
  std::abort();  // every Step names one of kCeilings
}

int BadInput(const std::string& message) {
  fmt::print(stderr, "loadbench probe: {}\n", message);
  return 2;
}

Status WriteCache(const Json& probe, std::string* path) {
  *path = ProbeCachePath();
  if (path->empty()) return Status::IOError("neither XDG_CACHE_HOME nor HOME is set");
  LB_RETURN_IF_ERROR(MakeDirs(fs::path(*path).parent_path().string()));
  return WriteJsonFile(*path, probe);
}

// A file of `bytes` in the page cache, written and not synced: no device I/O.
Status FillCached(int fd, const std::string& path, uint64_t bytes) {
  const std::vector<std::byte> block(kBlockBytes, std::byte{0x5a});
  for (uint64_t off = 0; off < bytes; off += kBlockBytes) {
    LB_RETURN_IF_ERROR(PwriteExact(fd, path, block.data(), block.size(), off));
  }
  return Status::Ok();
}

Json QuickProbe(const std::string& file_path) {
  const auto t0 = std::chrono::steady_clock::now();
  // Beside the file, so that the file fault is priced on its filesystem; else a temp dir.
  std::vector<std::string> dirs;
  if (!file_path.empty()) dirs.push_back(fs::path(file_path).parent_path().string());
  const char* tmp = std::getenv("TMPDIR");
  dirs.push_back(tmp != nullptr && *tmp == '/' ? tmp : "/tmp");
  UniqueFd fd;
  std::string scratch, dir;
  Status s = Status::IOError("no directory for a scratch file");
  for (const std::string& d : dirs) {
    dir = d.empty() ? "." : d;
    s = OpenUnnamedFile(dir, &fd, &scratch);
    if (s.ok()) break;
  }
  if (s.ok()) s = FillCached(fd.get(), scratch, kQuickFileBytes);

  Json p = NewProbe("quick", dir, kQuickFileBytes);
  Json& c = p["ceilings"];
  for (const char* key : {"sequential_write", "cold_direct_read", "cold_buffered_read",
                          "device_limit", "warm_read"}) {
    c[key] = {{"gb_per_s", nullptr},
              {"reason",
               fmt::format("not measured: a run's quick probe does no device I/O; {}", kRunProbe)}};
  }
  for (const CeilingSpec& spec : kCeilings) {
    if (!std::string_view(spec.key).starts_with("first_touch_")) continue;
    c[spec.key] = {{spec.figure, nullptr},
                   {"reason", fmt::format("not measured by a run's quick probe; {}", kRunProbe)}};
  }
  c["memcpy"] = probe::MemcpyBandwidth(kQuickSizes.memcpy_bytes, kMemcpyReps);
  c["memory_fill"] = probe::MemoryFill(kQuickSizes.fill_bytes, kFillReps);
  c["h2d_pinned"] = probe::HostToDevice(true, kQuickSizes.memcpy_bytes, kMemcpyReps);
  c["h2d_pageable"] = probe::HostToDevice(false, kQuickSizes.memcpy_bytes, kMemcpyReps);
  c["anon_4k_fault"] = probe::AnonFault4k(kQuickSizes.anon_bytes, kTouchReps);
  c["thp_fault"] = probe::ThpFault(kQuickSizes.thp_bytes, kTouchReps);
  c["file_minor_fault"] = s.ok() ? probe::FileMinorFault(scratch, kQuickFileBytes, kQuickFaultReps)
                                 : Json{{"us_per_fault", nullptr}, {"reason", s.message()}};
  p["facts"] = Facts(CollectEnv(file_path));
  p["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace

std::string ProbeCachePath() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base;
  if (xdg != nullptr && xdg[0] == '/') {
    base = xdg;  // the XDG spec: a relative path is invalid and ignored
  } else if (home != nullptr && home[0] == '/') {
    base = std::string(home) + "/.cache";
  } else {
    return "";
  }
  return base + "/loadbench/probe.json";
}

namespace {

// The probe cached at `path` when it is from this boot, with "source" (the path), "age_s" and
// "same_device" added; else nullopt and *why says why (missing, corrupt, another boot).
std::optional<Json> ReadCachedProbe(const std::string& path, const std::string& file_path,
                                    std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = fmt::format("no probe of this machine cached at {}", path);
    return std::nullopt;
  }
  Json cached = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  const bool valid = cached.is_object() && cached.value("boot_id", Json()).is_string() &&
                     cached.value("time_unix", Json()).is_number_integer() &&
                     cached.value("ceilings", Json()).is_object() &&
                     cached.value("scratch", Json()).is_object();
  if (!valid) {
    *why = fmt::format("the cached probe {} is corrupt and was ignored", path);
    return std::nullopt;
  }
  if (const std::string boot = BootId(); boot.empty() || cached["boot_id"] != boot) {
    *why = fmt::format("the cached probe {} is from an earlier boot and was ignored", path);
    return std::nullopt;
  }
  cached["source"] = path;
  cached["age_s"] = static_cast<int64_t>(std::time(nullptr)) - cached["time_unix"].get<int64_t>();
  const std::string here = DeviceOf(file_path);
  cached["same_device"] =
      here.empty() ? Json() : Json(cached["scratch"].value("device", Json()) == here);
  return cached;
}

}  // namespace

std::string QuickProbeCachePath() {
  const std::string full = ProbeCachePath();
  return full.empty() ? "" : (fs::path(full).parent_path() / "probe-quick.json").string();
}

std::optional<nlohmann::ordered_json> CachedProbe(const std::string& file_path, std::string* why) {
  const std::string path = ProbeCachePath();
  if (path.empty()) {
    *why = "no cache directory (neither XDG_CACHE_HOME nor HOME is set)";
    return std::nullopt;
  }
  return ReadCachedProbe(path, file_path, why);
}

nlohmann::ordered_json ProbeForRun(const std::string& file_path) {
  std::string why;
  if (auto cached = CachedProbe(file_path, &why)) return *cached;
  const std::string quick_path = QuickProbeCachePath();
  std::string unused;
  if (!quick_path.empty()) {
    std::optional<Json> quick = ReadCachedProbe(quick_path, file_path, &unused);
    if (quick && quick->value("kind", "") == "quick") {
      (*quick)["note"] = fmt::format(
          "{}: the quick probe of this boot instead (an earlier command's), without the device "
          "figures; {}",
          why, kRunProbe);
      return *quick;
    }
  }
  Json p = QuickProbe(file_path);
  // Kept for the next command of this boot; one that cannot be written is made again then.
  if (!quick_path.empty() && MakeDirs(fs::path(quick_path).parent_path().string()).ok()) {
    (void)WriteJsonFile(quick_path, p);
  }
  p["source"] = "quick";
  p["age_s"] = 0;
  p["same_device"] = nullptr;
  p["note"] = fmt::format("{}: a quick probe made here instead, without the device figures; {}",
                          why, kRunProbe);
  return p;
}

namespace {

// Checks --size and the scratch directory, which is created if missing and must have room for
// the file with kHeadroomBytes to spare. *dir gets the directory as an absolute path, and
// *size the file's size rounded up to whole blocks.
Status CheckScratch(const ProbeOptions& opts, uint64_t* size, std::string* dir) {
  LB_RETURN_IF_ERROR(ParseBytes(opts.size, "--size", size));
  if (*size < kBlockBytes) {
    return Status::BadInput(fmt::format("--size: at least 1 MiB, got '{}'", opts.size));
  }
  LB_RETURN_IF_ERROR(MakeDirs(opts.dir));
  std::error_code ec;
  *dir = fs::absolute(opts.dir, ec).lexically_normal().string();
  struct statvfs vfs {};
  if (::statvfs(dir->c_str(), &vfs) != 0) {
    return Status::FromErrno(fmt::format("{}: statvfs", *dir), errno);
  }
  const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (avail < kHeadroomBytes || avail - kHeadroomBytes < *size) {
    return Status::BadInput(fmt::format(
        "{}: not enough free space for the scratch file: needs {} plus {} to spare, {} free", *dir,
        FormatBytes(*size), FormatBytes(kHeadroomBytes), FormatBytes(avail)));
  }
  *size = (*size + kBlockBytes - 1) / kBlockBytes * kBlockBytes;  // no overflow: size <= avail
  return Status::Ok();
}

// The results folder (--out, or one named by the time), created here; *env_path, where
// env.json goes, must not exist yet, so that no earlier result is overwritten.
Status MakeOutDir(const ProbeOptions& opts, std::string* out, std::string* env_path) {
  *out = opts.out_dir.empty() ? "results/probe-" + UtcStamp(std::time(nullptr), "%Y%m%d-%H%M%S")
                              : opts.out_dir;
  *env_path = *out + "/env.json";
  if (::access(env_path->c_str(), F_OK) == 0) {
    return Status::BadInput(fmt::format("{}: already exists; choose another --out", *env_path));
  }
  return MakeDirs(*out);
}

// The first user access to fresh memory populated `how`, over at most kFirstTouchBytes (the
// reads read them from the scratch file).
Step FirstTouchStep(const char* key, probe::FirstTouchBy how, const std::string& scratch,
                    uint64_t size) {
  const uint64_t bytes = std::min(size, kFirstTouchBytes);
  return {key,
          fmt::format("first access to {} populated by {}", FormatBytes(bytes),
                      probe::FirstTouchName(how)),
          [=] { return probe::FirstTouch(how, scratch, bytes, kFaultReps); }};
}

// The measurements of the scratch file `scratch` (open as fd), in order: the write comes
// first, and fills the file that the others read and map.
std::vector<Step> FileSteps(int fd, const std::string& scratch, uint64_t size) {
  const std::string sz = FormatBytes(size);
  return {
      {"sequential_write", fmt::format("sequential write of {}", sz),
       [=] { return probe::SequentialWrite(fd, scratch, size); }},
      {"cold_direct_read",
       fmt::format("cold O_DIRECT io_uring read of {}, {} times", sz, kDeviceReps),
       [=] { return probe::ColdRecipeRead(probe::kReadRecipes[0], {scratch}, kDeviceReps); }},
      {"cold_buffered_read", fmt::format("cold buffered read of {}, {} times", sz, kDeviceReps),
       [=] { return probe::ColdBufferedRead(scratch, size, kDeviceReps); }},
      {"device_limit",
       fmt::format("cold reads of {} by each of {} recipes, {} times each", sz,
                   std::size(probe::kReadRecipes), kDeviceReps),
       [=] { return probe::DeviceLimit({scratch}, kDeviceReps); }},
      {"warm_read", fmt::format("warm read of {}, {} times", sz, kDeviceReps),
       [=] { return probe::WarmRead(scratch, size, kDeviceReps); }},
      {"file_minor_fault", fmt::format("minor faults mapping the cached {}", sz),
       [=] { return probe::FileMinorFault(scratch, size, kFaultReps); }},
      FirstTouchStep("first_touch_user_write", probe::FirstTouchBy::kUserWrite, scratch, size),
      FirstTouchStep("first_touch_map_populate", probe::FirstTouchBy::kMapPopulate, scratch, size),
      FirstTouchStep("first_touch_populate_write", probe::FirstTouchBy::kPopulateWrite, scratch,
                     size),
      FirstTouchStep("first_touch_read", probe::FirstTouchBy::kRead, scratch, size),
      FirstTouchStep("first_touch_direct_read", probe::FirstTouchBy::kDirectRead, scratch, size),
  };
}

// The measurements of memory, page faults and host-to-GPU copies, which need no file.
std::vector<Step> MemorySteps() {
  return {
      {"memcpy", fmt::format("memcpy of {}", FormatBytes(kFullSizes.memcpy_bytes)),
       [] { return probe::MemcpyBandwidth(kFullSizes.memcpy_bytes, kMemcpyReps); }},
      {"memory_fill", fmt::format("memset of {} faulted in", FormatBytes(kFullSizes.fill_bytes)),
       [] { return probe::MemoryFill(kFullSizes.fill_bytes, kFillReps); }},
      {"h2d_pinned",
       fmt::format("cudaMemcpy to the GPU from pinned memory, {}",
                   FormatBytes(kFullSizes.memcpy_bytes)),
       [] { return probe::HostToDevice(true, kFullSizes.memcpy_bytes, kMemcpyReps); }},
      {"h2d_pageable",
       fmt::format("cudaMemcpy to the GPU from pageable memory, {}",
                   FormatBytes(kFullSizes.memcpy_bytes)),
       [] { return probe::HostToDevice(false, kFullSizes.memcpy_bytes, kMemcpyReps); }},
      {"anon_4k_fault",
       fmt::format("4 KiB anonymous faults over {}", FormatBytes(kFullSizes.anon_bytes)),
       [] { return probe::AnonFault4k(kFullSizes.anon_bytes, kTouchReps); }},
      {"thp_fault", fmt::format("THP faults over {}", FormatBytes(kFullSizes.thp_bytes)),
       [] { return probe::ThpFault(kFullSizes.thp_bytes, kTouchReps); }},
  };
}

// Runs the file's steps, then closes *fd, then runs the memory steps, each with its line of
// progress, into (*probe)["ceilings"]. Once the write has failed, the file's other steps are
// recorded with the reason rather than run. False when interrupted.
bool RunSteps(const std::vector<Step>& file_steps, const std::vector<Step>& memory_steps,
              UniqueFd* fd, Json* probe) {
  const size_t total = file_steps.size() + memory_steps.size();
  size_t n = 0;
  std::string unwritten;  // why the file's measurements cannot run, once the write failed
  // One measurement with its line of progress; false when interrupted.
  auto run = [&](const Step& step, bool needs_file) {
    const CeilingSpec& spec = Spec(step.key);
    fmt::print(stderr, "probe [{}/{}] {}: ", ++n, total, step.what);
    Json m = needs_file && !unwritten.empty() ? Json{{spec.figure, nullptr}, {"reason", unwritten}}
                                              : step.run();
    fmt::print(stderr, "{}\n",
               m[spec.figure].is_number()
                   ? fmt::format("{:.2f} {}", m[spec.figure].get<double>(), spec.unit)
                   : "n/a: " + Text(m.value("reason", Json())));
    (*probe)["ceilings"][step.key] = std::move(m);
    return !Interrupted();
  };
  bool finished = true;
  for (const Step& step : file_steps) {
    if (!(finished = run(step, true))) break;
    if (!unwritten.empty()) continue;
    Json& write = (*probe)["ceilings"]["sequential_write"];
    if (!write["gb_per_s"].is_number()) {
      unwritten = "the scratch file could not be written: " + Text(write["reason"]);
    }
  }
  fd->reset();  // done with the scratch file: its space and cache are freed here
  for (const Step& step : memory_steps) {
    if (!finished || !(finished = run(step, false))) break;
  }
  return finished;
}

// Writes env.json (the probe inside it) and the cache, and prints the probe: the exit code.
int WriteAndShow(const ProbeOptions& opts, const Json& env, const Json& probe,
                 const std::string& env_path, uint64_t size, const std::string& dir) {
  if (Status s = WriteJsonFile(env_path, env); !s.ok()) {
    fmt::print(stderr, "loadbench probe: {}\n", s.message());
    return 1;
  }
  std::string cache;
  if (Status s = WriteCache(probe, &cache); !s.ok()) {
    // Runs then make a quick probe of their own, which says so; not a reason to fail here.
    fmt::print(stderr, "loadbench probe: the probe was not cached: {}\n", s.message());
    cache.clear();
  }
  if (opts.json) {
    fmt::print("{}\n", probe.dump(2, ' ', false, Json::error_handler_t::replace));
  } else {
    fmt::print("loadbench probe: {} scratch file in {} ({}), {:.1f} s\n\n{}", FormatBytes(size),
               dir, Text(probe["facts"]["filesystem"]), probe["wall_s"].get<double>(),
               Table(probe));
  }
  fmt::print(stderr, "results: {}{}\n", env_path, cache.empty() ? "" : "; cached in " + cache);
  return 0;
}

}  // namespace

int ProbeMain(const ProbeOptions& opts) {
  if (!opts.storage.empty()) return probe::StorageProbeMain(opts);
  InstallInterruptHandlers();
  const auto t0 = std::chrono::steady_clock::now();
  // Everything the user gave is checked before anything is written.
  uint64_t size = 0;
  std::string dir;
  if (Status s = CheckScratch(opts, &size, &dir); !s.ok()) return BadInput(s.message());
  HeldLock machine;  // the probe is a measurement: one at a time on the machine
  if (Status s = BeginMeasurement("loadbench probe", ThisProcess(opts.command_line, opts.out_dir),
                                  !opts.no_wait, &machine);
      !s.ok()) {
    const int code = BadInput(s.message());
    return Interrupted() ? 130 : code;
  }
  UniqueFd fd;
  std::string scratch;
  if (Status s = OpenUnnamedFile(dir, &fd, &scratch); !s.ok()) return BadInput(s.message());
  std::string out, env_path;
  if (Status s = MakeOutDir(opts, &out, &env_path); !s.ok()) return BadInput(s.message());

  Json env = CollectEnv(dir);
  env["command_line"] = opts.command_line;
  Json probe = NewProbe("full", dir, size);
  if (!RunSteps(FileSteps(fd.get(), scratch, size), MemorySteps(), &fd, &probe)) {
    ::rmdir(out.c_str());  // created above and still empty; a folder that holds anything stays
    fmt::print(stderr, "loadbench probe: interrupted; the scratch file is gone, nothing written\n");
    return 130;
  }

  probe["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  probe["facts"] = Facts(env);
  env["probe"] = probe;
  return WriteAndShow(opts, env, probe, env_path, size, dir);
}

namespace probe {

Json NewProbeObject(const char* kind, const std::string& dir, uint64_t bytes) {
  return NewProbe(kind, dir, bytes);
}
Json ProbeFacts(const Json& env) { return Facts(env); }
Status CheckProbeScratch(const ProbeOptions& opts, uint64_t* size, std::string* dir) {
  return CheckScratch(opts, size, dir);
}
Status MakeProbeOutDir(const ProbeOptions& opts, std::string* out, std::string* env_path) {
  return MakeOutDir(opts, out, env_path);
}

}  // namespace probe
}  // namespace loadbench
