// The machine's state (harness/machine/tuning.h): every setting read; tune sets what it says and
// restore writes back exactly what was there; a setting that cannot be set leaves nothing
// half-set; every change is in the leftovers journal until it is restored, so that a command
// killed while tuned has its settings restored by the next one. Most tests work on a folder
// that stands in for /sys and /proc; those that need the real settings (root, this kernel's
// free page reporting) skip with the reason elsewhere, and put every setting back even when
// they fail.
#include "harness/machine/tuning.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/leftovers/leftovers.h"
#include "harness/machine/env.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kOrder = "/sys/module/page_reporting/parameters/page_reporting_order";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void Put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text << "\n";
}

// Every regular file under `dir` and what it holds.
std::map<std::string, std::string> Tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && !e.is_symlink()) out[e.path()] = Slurp(e.path());
  }
  return out;
}

// The leftovers journal in a folder of the test's own, for as long as it lives.
class OwnLockDir {
 public:
  OwnLockDir() { ::setenv("LOADBENCH_LOCK_DIR", dir_.path().c_str(), 1); }
  ~OwnLockDir() { ::unsetenv("LOADBENCH_LOCK_DIR"); }
  // Every line of every journal.
  std::string Journals() const {
    std::string all;
    std::error_code ec;
    for (const auto& e :
         fs::directory_iterator(dir_.path() + "/leftovers-" + std::to_string(::geteuid()), ec)) {
      all += Slurp(e.path()) + "\n";
    }
    return all;
  }

 private:
  test::TempDir dir_;
};

// A machine of two CPUs with governors, free page reporting at order 9, buddy orders 0 to 10
// (696 MiB free in blocks of order 9 and up) and a hugetlb pool of 512 pages, 500 free.
class FakeMachine : public ::testing::Test {
 protected:
  void SetUp() override {
    root_.sys = dir_.path() + "/sys";
    root_.proc = dir_.path() + "/proc";
    const std::string thp = root_.sys + "/kernel/mm/transparent_hugepage/";
    Put(thp + "enabled", "always [madvise] never");
    Put(thp + "defrag", "always defer defer+madvise [madvise] never");
    Put(thp + "khugepaged/defrag", "1");
    Put(root_.sys + (kOrder + 4), "9");  // kOrder without its "/sys"
    Put(root_.sys + "/module/page_reporting/parameters/min_free_ms", "0");
    Put(root_.proc + "/buddyinfo",
        "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1 "
        "     1      3\nNode 0, zone   Normal   3383   5955   4291   1540    103    139    263  "
        "   52      7     13    164");
    Put(root_.proc + "/meminfo",
        "MemTotal:        8000000 kB\nHugePages_Total:     512\nHugePages_Free:      500\n"
        "HugePages_Rsvd:        0\nHugepagesize:       2048 kB");
    for (const char* k :
         {"swappiness", "dirty_ratio", "dirty_background_ratio", "dirty_bytes",
          "dirty_background_bytes", "dirty_expire_centisecs", "dirty_writeback_centisecs"}) {
      Put(root_.proc + "/sys/vm/" + k, "10");
    }
    for (int cpu : {0, 1})
      Put(Cpufreq(cpu) + "scaling_available_governors", "performance powersave");
    for (int cpu : {0, 1}) Put(Cpufreq(cpu) + "scaling_governor", "powersave");
  }

  std::string Cpufreq(int cpu) const {
    return root_.sys + "/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/";
  }
  std::string Order() const { return root_.sys + (kOrder + 4); }

  test::TempDir dir_;
  SystemRoot root_;
};

TEST_F(FakeMachine, ShowReadsEverySettingInItsOrder) {
  std::vector<std::string> names;
  std::map<std::string, std::string> value;
  for (const SystemSetting& s : ReadSystemSettings(dir_.path(), root_)) {
    names.push_back(s.name);
    value[s.name] = s.value.value_or("none");
  }
  const std::vector<std::string> want = {"thp.enabled",
                                         "thp.defrag",
                                         "thp.khugepaged_defrag",
                                         "thp.free_2mib_blocks_mib",
                                         "hugetlb.total",
                                         "hugetlb.free",
                                         "page_reporting.min_free_ms",
                                         "page_reporting.page_reporting_order",
                                         "vm.swappiness",
                                         "vm.dirty_ratio",
                                         "vm.dirty_background_ratio",
                                         "vm.dirty_bytes",
                                         "vm.dirty_background_bytes",
                                         "vm.dirty_expire_centisecs",
                                         "vm.dirty_writeback_centisecs",
                                         "block.device",
                                         "block.read_ahead_kb",
                                         "block.scheduler",
                                         "cpu.governor",
                                         "balloon.driver",
                                         "damon"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(value["thp.enabled"], "madvise");
  EXPECT_EQ(value["thp.defrag"], "madvise");
  EXPECT_EQ(value["page_reporting.page_reporting_order"], "9");
  EXPECT_EQ(value["cpu.governor"], "powersave");
  EXPECT_EQ(value["block.device"], "none");  // no /sys/dev/block in the stand-in
  EXPECT_EQ(value["balloon.driver"], "none");
}

// Orders 9 and 10 of both zones: (1 + 13) blocks of 2 MiB and (3 + 164) of 4 MiB.
TEST_F(FakeMachine, HugePagesThatCanBeHadNowAreReadOnly) {
  if (::sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "the stand-in's orders are of 4 KiB pages";
  const HugePageState h = ReadHugePageState(root_);
  EXPECT_EQ(h.free_2mib_blocks_bytes, uint64_t{696} << 20);
  EXPECT_EQ(h.hugetlb_total, 512u);
  EXPECT_EQ(h.hugetlb_free, 500u);
  EXPECT_EQ(h.hugetlb_page_bytes, 2048u * 1024);
  EXPECT_EQ(DescribeHugePages(h),
            "696 MiB free in blocks of 2 MiB and up; hugetlb: 500 of 512 pages of 2048 kB free");
  std::map<std::string, SystemSetting> by;
  for (const SystemSetting& s : ReadSystemSettings(dir_.path(), root_)) by[s.name] = s;
  EXPECT_EQ(by["thp.free_2mib_blocks_mib"].value, "696");
  EXPECT_EQ(by["thp.free_2mib_blocks_mib"].path, root_.proc + "/buddyinfo");
  EXPECT_EQ(by["hugetlb.total"].value, "512");
  EXPECT_EQ(by["hugetlb.free"].value, "500");
  EXPECT_EQ(by["hugetlb.total"].path, root_.proc + "/meminfo");
  EXPECT_NE(by["hugetlb.total"].note.find("2048 kB"), std::string::npos)
      << by["hugetlb.total"].note;
  for (const char* name : {"thp.free_2mib_blocks_mib", "hugetlb.total", "hugetlb.free"}) {
    EXPECT_TRUE(by[name].note.starts_with("read only: ")) << name << ": " << by[name].note;
  }
  // Read only: nothing tune plans touches them.
  std::vector<SettingChange> plan;
  ASSERT_TRUE(PlanTune(PageReportingChoice::kOff, root_, &plan).ok());
  for (const SettingChange& c : plan) EXPECT_EQ(c.path.find(root_.proc), std::string::npos);
}

// No hugetlb in meminfo, a buddyinfo column that is no count: none, with why, never a guess.
TEST_F(FakeMachine, HugePagesThatCannotBeReadAreNone) {
  Put(root_.proc + "/meminfo", "MemTotal:        8000000 kB");
  Put(root_.proc + "/buddyinfo", "Node 0, zone   Normal   3383   5955   many");
  const HugePageState h = ReadHugePageState(root_);
  EXPECT_FALSE(h.free_2mib_blocks_bytes.has_value());
  EXPECT_FALSE(h.hugetlb_total.has_value());
  EXPECT_FALSE(h.hugetlb_free.has_value());
  EXPECT_EQ(DescribeHugePages(h),
            "unknown free in blocks of 2 MiB and up; hugetlb: unknown of unknown pages free");
  std::map<std::string, SystemSetting> by;
  for (const SystemSetting& s : ReadSystemSettings(dir_.path(), root_)) by[s.name] = s;
  EXPECT_FALSE(by["thp.free_2mib_blocks_mib"].value.has_value());
  EXPECT_NE(by["thp.free_2mib_blocks_mib"].note.find("cannot be read"), std::string::npos);
  EXPECT_FALSE(by["hugetlb.total"].value.has_value());
  EXPECT_NE(by["hugetlb.total"].note.find("no hugetlb"), std::string::npos);
  fs::remove(root_.proc + "/buddyinfo");
  EXPECT_FALSE(ReadHugePageState(root_).free_2mib_blocks_bytes.has_value());
}

TEST_F(FakeMachine, TuneHoldsReportingOffAndSetsTheGovernorsThenRestoreWritesBackAll) {
  OwnLockDir locks;
  const auto before = Tree(dir_.path());
  std::vector<SettingChange> done;
  ASSERT_TRUE(TuneSystem(PageReportingChoice::kOff, root_, &done).ok());
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(Slurp(Order()), "11");  // above the largest order, 10: no free block is reported
  EXPECT_EQ(Slurp(Cpufreq(0) + "scaling_governor"), "performance");
  EXPECT_EQ(Slurp(Cpufreq(1) + "scaling_governor"), "performance");
  EXPECT_TRUE(SystemEnv(dir_.path(), nullptr, root_)["tuned"].get<bool>());
  // Each change is journalled with what it replaced, until restored.
  for (const SettingChange& c : done) {
    EXPECT_NE(locks.Journals().find("+\tsetting\t" + c.path + "\t" + c.before), std::string::npos)
        << c.path;
  }
  std::vector<std::string> said;
  ASSERT_TRUE(RestoreSystem(done, &said).ok());
  EXPECT_EQ(said.size(), 3u);
  EXPECT_EQ(Tree(dir_.path()), before);
  EXPECT_EQ(locks.Journals(), "");  // the journal went with its last line
}

TEST_F(FakeMachine, KeepLeavesPageReportingAndCountsAsTuned) {
  std::vector<SettingChange> plan;
  ASSERT_TRUE(PlanTune(PageReportingChoice::kKeep, root_, &plan).ok());
  ASSERT_EQ(plan.size(), 2u);
  for (const SettingChange& c : plan) EXPECT_NE(c.path, Order());
  for (int cpu : {0, 1}) Put(Cpufreq(cpu) + "scaling_governor", "performance");
  const TuneRecord keep{"experiment", "now", PageReportingChoice::kKeep, {}};
  const Json j = SystemEnv(dir_.path(), &keep, root_);
  EXPECT_TRUE(j["tuned"].get<bool>()) << j.dump();
  EXPECT_EQ(j["page_reporting"], "on");
  EXPECT_EQ(j["tune"]["page_reporting"], "keep");
  // Without a tune that chose to keep it, reporting that is on is not the tuned state.
  const Json untuned = SystemEnv(dir_.path(), nullptr, root_);
  EXPECT_FALSE(untuned["tuned"].get<bool>());
  ASSERT_EQ(untuned["not_tuned_because"].size(), 1u);
  EXPECT_NE(untuned["not_tuned_because"][0].get<std::string>().find("free page reporting is on"),
            std::string::npos);
}

TEST_F(FakeMachine, NothingToTuneWhereThereIsNoReportingNorGovernor) {
  fs::remove_all(root_.sys + "/module");
  fs::remove_all(root_.sys + "/devices");
  std::vector<SettingChange> plan;
  ASSERT_TRUE(PlanTune(PageReportingChoice::kOff, root_, &plan).ok());
  EXPECT_TRUE(plan.empty());
  const Json j = SystemEnv(dir_.path(), nullptr, root_);
  EXPECT_EQ(j["page_reporting"], "absent");
  EXPECT_TRUE(j["tuned"].get<bool>());
  EXPECT_FALSE(j["settings"]["cpu.governor"]["note"].get<std::string>().empty());
}

// A setting that cannot be written (here a link, which a setting never is) after two that
// were: both are put back, and the message names the one that failed.
TEST_F(FakeMachine, ASettingThatCannotBeSetLeavesNothingHalfSet) {
  OwnLockDir locks;
  const std::string gov1 = Cpufreq(1) + "scaling_governor";
  fs::remove(gov1);
  Put(dir_.path() + "/elsewhere", "powersave");
  fs::create_symlink(dir_.path() + "/elsewhere", gov1);
  const auto before = Tree(dir_.path());
  std::vector<SettingChange> done;
  const Status s = TuneSystem(PageReportingChoice::kOff, root_, &done);
  ASSERT_FALSE(s.ok());
  // The machine refused, the user's input was fine: an environment error (exit 1), not 2.
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("cannot set " + gov1 + " to performance"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("nothing was changed"), std::string::npos) << s.message();
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(Tree(dir_.path()), before);
  EXPECT_EQ(locks.Journals(), "");
}

TEST(TunableSetting, OnlyWhatTuneWritesAndOnlyWords) {
  EXPECT_TRUE(IsTunableSetting(kOrder, "9"));
  EXPECT_TRUE(
      IsTunableSetting("/sys/devices/system/cpu/cpu12/cpufreq/scaling_governor", "ondemand"));
  EXPECT_FALSE(IsTunableSetting("/proc/sys/vm/drop_caches", "3"));
  EXPECT_FALSE(IsTunableSetting("/sys/devices/system/cpu/cpu1/../../../../etc/passwd", "x"));
  EXPECT_FALSE(IsTunableSetting(kOrder, "9\nroot"));
  EXPECT_FALSE(WriteTunableSetting("/proc/sys/vm/drop_caches", "3").ok());
}

TEST(SystemEnvTest, EnvJsonRecordsTheStateAndWhetherItIsTuned) {
  const Json env = CollectEnv("/proc/self/exe");
  ASSERT_TRUE(env.contains("system"));
  const Json& j = env["system"];
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"settings", "page_reporting", "damon_pageout", "tune",
                                            "tuned", "not_tuned_because"}));
  EXPECT_EQ(j["settings"]["vm.swappiness"]["path"], "/proc/sys/vm/swappiness");
  EXPECT_EQ(j["settings"]["vm.swappiness"]["value"], Slurp("/proc/sys/vm/swappiness"));
  EXPECT_EQ(j["tuned"].get<bool>(), j["not_tuned_because"].empty());
  // Whether a huge page could be had, beside THP's settings; this kernel has a buddyinfo.
  const Json& thp = env["thp"];
  ASSERT_TRUE(thp["free_2mib_blocks_mib"].is_number_unsigned()) << thp.dump();
  for (const char* k : {"hugetlb_total", "hugetlb_free", "hugetlb_page_bytes"}) {
    EXPECT_TRUE(thp.contains(k)) << k;
  }
  EXPECT_TRUE(j["settings"]["thp.free_2mib_blocks_mib"]["note"].get<std::string>().starts_with(
      "read only"));
}

// ---- The real machine ----

// Why the real free page reporting cannot be tuned here; "" when it can.
std::string CannotTuneHere() {
  if (::geteuid() != 0) return "not root: tuning needs root";
  if (::access(kOrder, W_OK) != 0) return std::string(kOrder) + " is not writable here";
  return "";
}

// Every tunable setting of the real machine, written back when the test ends, failed or not.
class RealMachine : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = CannotTuneHere(); !why.empty()) GTEST_SKIP() << why;
    saved_[kOrder] = Slurp(kOrder);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
      const std::string g = e.path().string() + "/cpufreq/scaling_governor";
      if (fs::exists(g)) saved_[g] = Slurp(g);
    }
    // `make test` runs the suite tuned: these tests need free page reporting that tune changes,
    // so it is set to the kernel's default (pageblock_order) until TearDown writes back.
    std::vector<SettingChange> plan;
    bool held_off = PlanTune(PageReportingChoice::kOff, {}, &plan).ok();
    for (const SettingChange& c : plan) held_off = held_off && c.path != kOrder;
    if (held_off) std::ofstream(kOrder) << "9\n";
  }
  void TearDown() override {
    for (const auto& [path, value] : saved_) {
      if (Slurp(path) != value) std::ofstream(path) << value << "\n";
    }
  }
  // The value of every setting show lists, but the counters that change by themselves (the
  // huge pages that can be had among them).
  static std::map<std::string, std::string> Settings() {
    std::map<std::string, std::string> out;
    for (const SystemSetting& s : ReadSystemSettings(fs::temp_directory_path())) {
      struct stat st {};
      const bool counter = (::stat(s.path.c_str(), &st) == 0 && (st.st_mode & S_IWUSR) == 0 &&
                            s.name.starts_with("page_reporting.")) ||
                           s.note.starts_with("read only");
      if (!counter) out[s.name] = s.value.value_or("none");
    }
    return out;
  }

  std::map<std::string, std::string> saved_;
};

TEST_F(RealMachine, TuneThenRestoreLeavesEverySettingAsItWas) {
  OwnLockDir locks;
  const auto before = Settings();
  std::vector<SettingChange> done;
  const Status s = TuneSystem(PageReportingChoice::kOff, {}, &done);
  ASSERT_TRUE(s.ok()) << s.message();
  const Json tuned = SystemEnv(fs::temp_directory_path(), nullptr);
  EXPECT_TRUE(tuned["tuned"].get<bool>()) << tuned.dump();
  EXPECT_EQ(tuned["page_reporting"], "off");
  std::vector<std::string> said;
  ASSERT_TRUE(RestoreSystem(done, &said).ok());
  EXPECT_EQ(Settings(), before);
}

// A command killed while tuned: the next one that measures writes the settings back, and says
// so.
TEST_F(RealMachine, TheJournalOfAKilledCommandRestoresItsSettings) {
  OwnLockDir locks;
  const std::string order = Slurp(kOrder);  // as SetUp left it: untuned
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<SettingChange> done;
    ::_exit(TuneSystem(PageReportingChoice::kOff, {}, &done).ok() && !done.empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  if (WEXITSTATUS(status) != 0) GTEST_SKIP() << "free page reporting is held off already";
  ASSERT_NE(Slurp(kOrder), order);
  const std::vector<std::string> cleaned = CleanLeftovers();
  ASSERT_EQ(cleaned.size(), 1u);
  EXPECT_NE(cleaned[0].find(fmt::format("setting {} restored to {}", kOrder, order)),
            std::string::npos)
      << cleaned[0];
  EXPECT_EQ(Slurp(kOrder), order);
}

}  // namespace
}  // namespace loadbench
