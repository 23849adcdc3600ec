#include "harness/machine/busy.h"

#include <charconv>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <vector>

#include "harness/machine/env.h"

namespace loadbench {
namespace {

std::optional<uint64_t> Number(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The words of one line, split at spaces.
std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The words of the first line of `text` whose first word is `key`; empty when there is none.
std::vector<std::string> LineOf(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> w = Words(line);
    if (!w.empty() && w[0] == key) return w;
  }
  return {};
}

bool IsDisk(const std::string& sys_dir, const std::string& name) {
  for (std::string_view memory : {"loop", "ram", "zram"}) {
    if (name.rfind(memory, 0) == 0) return false;
  }
  std::error_code ec;
  return std::filesystem::exists(sys_dir + "/block/" + name, ec);
}

}  // namespace

std::optional<CpuTimes> ReadCpuTimes(const std::string& proc_dir) {
  const std::optional<std::string> text = ReadFile(proc_dir + "/stat");
  if (!text) return std::nullopt;
  // cpu user nice system idle iowait irq softirq steal [guest guest_nice]
  const std::vector<std::string> w = LineOf(*text, "cpu");
  if (w.size() < 9) return std::nullopt;
  uint64_t t[8];
  for (size_t i = 0; i < 8; ++i) {
    const std::optional<uint64_t> v = Number(w[i + 1]);
    if (!v) return std::nullopt;
    t[i] = *v;
  }
  const uint64_t busy = t[0] + t[1] + t[2] + t[5] + t[6];
  return CpuTimes{busy, busy + t[3] + t[4] + t[7]};
}

std::optional<int64_t> ReadProcsRunning(const std::string& proc_dir) {
  const std::optional<std::string> text = ReadFile(proc_dir + "/stat");
  if (!text) return std::nullopt;
  const std::vector<std::string> w = LineOf(*text, "procs_running");
  if (w.size() < 2) return std::nullopt;
  const std::optional<uint64_t> v = Number(w[1]);
  return v ? std::optional<int64_t>(static_cast<int64_t>(*v)) : std::nullopt;
}

std::optional<int64_t> ReadIoInFlight(const std::string& proc_dir, const std::string& sys_dir) {
  const std::optional<std::string> text = ReadFile(proc_dir + "/diskstats");
  if (!text) return std::nullopt;
  // major minor name reads ... ; the 12th field is the I/Os currently in progress.
  constexpr size_t kName = 2, kInFlight = 11;
  int64_t sum = 0;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> w = Words(line);
    if (w.size() <= kInFlight || !IsDisk(sys_dir, w[kName])) continue;
    if (const std::optional<uint64_t> v = Number(w[kInFlight])) sum += static_cast<int64_t>(*v);
  }
  return sum;
}

}  // namespace loadbench
