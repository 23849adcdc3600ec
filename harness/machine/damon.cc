#include "harness/machine/damon.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/machine/env.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAdmin = "/kernel/mm/damon/admin/kdamonds";
constexpr const char* kReclaim = "/module/damon_reclaim/parameters/enabled";

std::string Trimmed(const std::string& path) {
  std::string s = ReadFile(path).value_or("");
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

// The numbered subfolders of `dir` (kdamonds, contexts, schemes), in order.
std::map<int, fs::path> Numbered(const fs::path& dir) {
  std::map<int, fs::path> out;
  std::error_code ec;
  static const std::regex number("[0-9]{1,6}");
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename();
    if (std::regex_match(name, number)) out[std::stoi(name)] = e.path();
  }
  return out;
}

// One scheme: "pageout of memory idle 60 s and more" (its least age, in aggregation intervals
// of `aggr_us`), or the action alone where its age cannot be read.
std::string SchemeWork(const fs::path& scheme, const std::string& aggr_us) {
  const std::string action = Trimmed(scheme / "action");
  const std::string age = Trimmed(scheme / "access_pattern/age/min");
  const bool numbers = !age.empty() && !aggr_us.empty() &&
                       age.find_first_not_of("0123456789") == std::string::npos &&
                       aggr_us.find_first_not_of("0123456789") == std::string::npos;
  if (!numbers || age.size() > 9 || aggr_us.size() > 12) return action;
  const double idle_s = std::stod(age) * std::stod(aggr_us) / 1e6;
  return fmt::format("{} of memory idle {:g} s and more", action, idle_s);
}

struct Kdamond {
  std::string state;               // "on" or "off"
  std::vector<std::string> works;  // "paddr: pageout of memory idle 60 s and more", ...
  bool pages_out = false;          // a scheme's action is pageout
};

Kdamond Describe(const fs::path& kdamond) {
  Kdamond k{Trimmed(kdamond / "state"), {}, false};
  for (const auto& [n, ctx] : Numbered(kdamond / "contexts")) {
    const std::string aggr = Trimmed(ctx / "monitoring_attrs/intervals/aggr_us");
    std::vector<std::string> schemes;
    for (const auto& [m, scheme] : Numbered(ctx / "schemes")) {
      schemes.push_back(SchemeWork(scheme, aggr));
      k.pages_out = k.pages_out || Trimmed(scheme / "action") == "pageout";
    }
    k.works.push_back(fmt::format("{}: {}", Trimmed(ctx / "operations"),
                                  schemes.empty() ? "monitoring only"
                                                  : fmt::format("{}", fmt::join(schemes, ", "))));
  }
  return k;
}

}  // namespace

void DamonSettings(const SystemRoot& root, std::vector<SystemSetting>* out) {
  const fs::path admin = root.sys + kAdmin;
  std::error_code ec;
  if (!fs::is_directory(admin, ec)) {
    out->push_back({"damon", admin, std::nullopt, "this kernel has no DAMON sysfs interface"});
  } else {
    const std::map<int, fs::path> kdamonds = Numbered(admin);
    if (kdamonds.empty()) out->push_back({"damon", admin, "none", "no kdamond is set up"});
    for (const auto& [n, dir] : kdamonds) {
      const Kdamond k = Describe(dir);
      out->push_back(
          {fmt::format("damon.kdamond{}", n), dir / "state", k.state,
           k.works.empty() ? "no context" : fmt::format("{}", fmt::join(k.works, "; "))});
    }
  }
  const std::string reclaim = root.sys + kReclaim;
  if (fs::exists(reclaim, ec)) {
    out->push_back({"damon_reclaim.enabled", reclaim, Trimmed(reclaim),
                    "DAMON_RECLAIM: pages out memory idle for a while, when enabled"});
  }
}

std::string DamonPageoutState(const SystemRoot& root) {
  std::error_code ec;
  const bool reclaim = fs::exists(root.sys + kReclaim, ec);
  if (!fs::is_directory(root.sys + kAdmin, ec) && !reclaim) return "absent";
  std::vector<SettingChange> plan;
  PlanDamon(root, &plan);
  return plan.empty() ? "off" : "on";
}

void PlanDamon(const SystemRoot& root, std::vector<SettingChange>* plan) {
  for (const auto& [n, dir] : Numbered(root.sys + kAdmin)) {
    const Kdamond k = Describe(dir);
    if (k.state != "on" || !k.pages_out) continue;
    plan->push_back({dir / "state", "on", "off",
                     fmt::format("DAMON kdamond{} pages out memory without memory pressure ({}): "
                                 "a warm run's file can leave the page cache by itself",
                                 n, fmt::join(k.works, "; "))});
  }
  const std::string reclaim = root.sys + kReclaim;
  if (Trimmed(reclaim) == "Y") {
    plan->push_back({reclaim, "Y", "N",
                     "DAMON_RECLAIM is enabled: it pages out memory idle for a while, and a warm "
                     "run's file can leave the page cache by itself"});
  }
}

bool IsDamonSetting(const std::string& path, const std::string& value) {
  static const std::regex state("/sys/kernel/mm/damon/admin/kdamonds/[0-9]{1,6}/state");
  if (std::regex_match(path, state)) return value == "on" || value == "off";
  return path == std::string("/sys") + kReclaim && (value == "Y" || value == "N");
}

}  // namespace loadbench
