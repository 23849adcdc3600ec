#include "harness/machine/counters.h"

#include <perfmon/pfmlib_perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

#include <fmt/format.h>

namespace loadbench {
namespace {

Status InitPfm() {
  static int rc = [] { return pfm_initialize(); }();
  if (rc != PFM_SUCCESS) {
    return Status::Unsupported(fmt::format("libpfm4 did not initialise: {}", pfm_strerror(rc)));
  }
  return Status::Ok();
}

// libpfm4's encoding of `name` as a perf_event_attr counting user and kernel.
Status Encode(const std::string& name, perf_event_attr* attr) {
  LB_RETURN_IF_ERROR(InitPfm());
  std::memset(attr, 0, sizeof *attr);
  pfm_perf_encode_arg_t arg{};
  arg.attr = attr;
  arg.size = sizeof arg;
  const int rc =
      pfm_get_os_event_encoding(name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
  if (rc != PFM_SUCCESS) {
    return Status::BadInput(fmt::format("--counters: {}: {} (libpfm4; `perf list` names events)",
                                        name, pfm_strerror(rc)));
  }
  attr->size = sizeof *attr;
  return Status::Ok();
}

std::optional<int> Paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

int PerfEventOpen(perf_event_attr* attr) {
  return static_cast<int>(::syscall(SYS_perf_event_open, attr, 0 /* this process */,
                                    -1 /* any CPU */, -1 /* no group */, PERF_FLAG_FD_CLOEXEC));
}

std::string OpenError(const perf_event_attr& attr, int err) {
  const bool hardware = attr.type == PERF_TYPE_HARDWARE || attr.type == PERF_TYPE_HW_CACHE ||
                        attr.type == PERF_TYPE_RAW;
  if (hardware && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)) {
    return fmt::format("no hardware PMU counts it here (perf_event_open: {}); virtual machines "
                       "often expose none",
                       std::strerror(err));
  }
  if (err == EACCES || err == EPERM) {
    const auto p = Paranoid();
    return fmt::format("not permitted (perf_event_open: {}; kernel.perf_event_paranoid={})",
                       std::strerror(err), p ? std::to_string(*p) : "?");
  }
  return fmt::format("perf_event_open: {}", std::strerror(err));
}

struct ReadValue {
  uint64_t value;
  uint64_t enabled;
  uint64_t running;
};

}  // namespace

const std::vector<std::string>& DefaultCounterNames() {
  static const std::vector<std::string> names = {"perf::PAGE-FAULTS",
                                                 "perf::MAJOR-FAULTS",
                                                 "perf::MINOR-FAULTS",
                                                 "perf::CONTEXT-SWITCHES",
                                                 "perf::CPU-MIGRATIONS",
                                                 "perf::TASK-CLOCK",
                                                 "CYCLES",
                                                 "INSTRUCTIONS",
                                                 "CACHE-MISSES",
                                                 "DTLB-LOAD-MISSES"};
  return names;
}

Status ParseCounterList(const std::string& text, std::vector<std::string>* names) {
  names->clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) {
      return Status::BadInput(fmt::format("--counters: empty event name in '{}'", text));
    }
    if (item == "none") continue;
    if (item == "default") {
      for (const auto& n : DefaultCounterNames()) names->push_back(n);
      continue;
    }
    perf_event_attr attr;
    LB_RETURN_IF_ERROR(Encode(item, &attr));
    names->push_back(item);
  }
  return Status::Ok();
}

Status CounterSet::Open(const std::vector<std::string>& names) {
  counters_.clear();
  for (const std::string& name : names) {
    perf_event_attr attr;
    LB_RETURN_IF_ERROR(Encode(name, &attr));
    attr.disabled = 1;
    attr.inherit = 1;  // threads the loader starts count too
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    Counter c;
    c.name = name;
    c.kernel = true;
    int fd = PerfEventOpen(&attr);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
      // perf_event_paranoid >= 2 keeps unprivileged users out of the kernel side; the user side
      // still says something, and Scope() tells which was counted.
      attr.exclude_kernel = 1;
      attr.exclude_hv = 1;
      c.kernel = false;
      fd = PerfEventOpen(&attr);
    }
    if (fd < 0) {
      c.error = OpenError(attr, errno);
    } else {
      c.fd.reset(fd);
    }
    counters_.push_back(std::move(c));
  }
  return Status::Ok();
}

void CounterSet::Enable() {
  for (auto& c : counters_) {
    if (c.fd.valid()) ::ioctl(c.fd.get(), PERF_EVENT_IOC_ENABLE, 0);
  }
}

void CounterSet::Disable() {
  for (auto& c : counters_) {
    if (c.fd.valid()) ::ioctl(c.fd.get(), PERF_EVENT_IOC_DISABLE, 0);
  }
}

nlohmann::ordered_json CounterSet::Read(std::vector<std::string>* scaled) const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& c : counters_) {
    out[c.name] = nullptr;
    if (!c.fd.valid()) continue;
    ReadValue v{};
    // With inherit set, the kernel sums the threads' counts into this read.
    if (::read(c.fd.get(), &v, sizeof v) != static_cast<ssize_t>(sizeof v)) continue;
    if (v.running == 0) continue;  // never scheduled on a counter: unknown, not zero
    if (v.running < v.enabled) {
      out[c.name] = static_cast<uint64_t>(static_cast<double>(v.value) * v.enabled / v.running);
      if (scaled != nullptr) scaled->push_back(c.name);
    } else {
      out[c.name] = v.value;
    }
  }
  return out;
}

nlohmann::ordered_json CounterSet::Unavailable() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& c : counters_) {
    if (!c.fd.valid()) out[c.name] = c.error;
  }
  return out;
}

nlohmann::ordered_json CounterSet::Scope() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& c : counters_) {
    if (c.fd.valid()) out[c.name] = c.kernel ? "user+kernel" : "user";
  }
  return out;
}

nlohmann::ordered_json CounterAvailability(const std::vector<std::string>& names) {
  CounterSet set;
  nlohmann::ordered_json j;
  j["requested"] = names;
  if (Status s = set.Open(names); !s.ok()) {
    j["error"] = s.message();
    return j;
  }
  j["unavailable"] = set.Unavailable();
  j["scope"] = set.Scope();
  const auto p = Paranoid();
  j["perf_event_paranoid"] = p ? nlohmann::ordered_json(*p) : nlohmann::ordered_json();
  j["method"] =
      "libpfm4 encoding, perf_event_open on the worker itself with inherit (threads count), "
      "enabled only over the timed region; multiplexed counts scaled by "
      "time_enabled/time_running";
  return j;
}

}  // namespace loadbench
