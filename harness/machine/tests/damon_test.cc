// DAMON as a part of the machine's state (harness/machine/damon.h): show names every kdamond with
// what it does; tune stops only the running ones that page memory out, and DAMON_RECLAIM;
// restore starts them again; only those files and values are ever written. On a folder that
// stands in for /sys.
#include "harness/machine/damon.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

void Put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text << "\n";
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// kdamond0: paddr, pageout of memory idle 12 x 5 s, running; kdamond1: vaddr, statistics only,
// running; kdamond2: paddr, pageout, stopped.
class FakeDamon : public ::testing::Test {
 protected:
  void SetUp() override {
    root_.sys = dir_.path() + "/sys";
    root_.proc = dir_.path() + "/proc";
    Kdamond(0, "on", "paddr", "pageout");
    Kdamond(1, "on", "vaddr", "stat");
    Kdamond(2, "off", "paddr", "pageout");
    ::setenv("LOADBENCH_LOCK_DIR", (dir_.path() + "/locks").c_str(), 1);
  }
  void TearDown() override { ::unsetenv("LOADBENCH_LOCK_DIR"); }

  std::string State(int n) const {
    return root_.sys + "/kernel/mm/damon/admin/kdamonds/" + std::to_string(n) + "/state";
  }
  void Kdamond(int n, const char* state, const char* ops, const char* action) {
    const std::string d = fs::path(State(n)).parent_path();
    Put(d + "/state", state);
    Put(d + "/contexts/0/operations", ops);
    Put(d + "/contexts/0/monitoring_attrs/intervals/aggr_us", "5000000");
    Put(d + "/contexts/0/schemes/0/action", action);
    Put(d + "/contexts/0/schemes/0/access_pattern/age/min", "12");
  }

  test::TempDir dir_;
  SystemRoot root_;
};

TEST_F(FakeDamon, ShowNamesEveryKdamondWithWhatItDoes) {
  std::vector<SystemSetting> shown;
  DamonSettings(root_, &shown);
  ASSERT_EQ(shown.size(), 3u);
  EXPECT_EQ(shown[0].name, "damon.kdamond0");
  EXPECT_EQ(shown[0].value, "on");
  EXPECT_EQ(shown[0].note, "paddr: pageout of memory idle 60 s and more");
  EXPECT_EQ(shown[1].note, "vaddr: stat of memory idle 60 s and more");
  EXPECT_EQ(shown[2].value, "off");
  EXPECT_EQ(DamonPageoutState(root_), "on");
}

TEST_F(FakeDamon, TuneStopsOnlyTheRunningPageoutAndRestoreStartsItAgain) {
  std::vector<SettingChange> plan;
  PlanDamon(root_, &plan);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].path, State(0));
  EXPECT_EQ(plan[0].before, "on");
  EXPECT_EQ(plan[0].after, "off");
  EXPECT_NE(plan[0].why.find("kdamond0 pages out memory"), std::string::npos) << plan[0].why;

  std::vector<SettingChange> done;
  ASSERT_TRUE(TuneSystem(PageReportingChoice::kOff, root_, &done).ok());
  ASSERT_EQ(done.size(), 1u);  // no page reporting nor governor in this stand-in
  EXPECT_EQ(Slurp(State(0)), "off");
  EXPECT_EQ(Slurp(State(1)), "on");  // monitoring alone takes nothing away
  EXPECT_EQ(DamonPageoutState(root_), "off");
  std::vector<std::string> said;
  ASSERT_TRUE(RestoreSystem(done, &said).ok());
  EXPECT_EQ(Slurp(State(0)), "on");
  EXPECT_EQ(Slurp(State(2)), "off");
}

TEST_F(FakeDamon, DamonReclaimIsShownAndHeldOff) {
  const std::string reclaim = root_.sys + "/module/damon_reclaim/parameters/enabled";
  Put(reclaim, "Y");
  std::vector<SettingChange> plan;
  PlanDamon(root_, &plan);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[1].path, reclaim);
  EXPECT_EQ(plan[1].after, "N");
  std::vector<SystemSetting> shown;
  DamonSettings(root_, &shown);
  EXPECT_EQ(shown.back().name, "damon_reclaim.enabled");
  EXPECT_EQ(shown.back().value, "Y");
}

TEST(Damon, AKernelWithoutItIsSaidSo) {
  test::TempDir dir;
  const SystemRoot root{dir.path() + "/sys", dir.path() + "/proc"};
  std::vector<SystemSetting> shown;
  DamonSettings(root, &shown);
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0].name, "damon");
  EXPECT_FALSE(shown[0].value.has_value());
  EXPECT_EQ(DamonPageoutState(root), "absent");
  fs::create_directories(dir.path() + "/sys/kernel/mm/damon/admin/kdamonds");
  shown.clear();
  DamonSettings(root, &shown);
  EXPECT_EQ(shown[0].value, "none");
  EXPECT_EQ(DamonPageoutState(root), "off");
}

TEST(Damon, OnlyItsOwnFilesAndValuesAreWritten) {
  EXPECT_TRUE(IsDamonSetting("/sys/kernel/mm/damon/admin/kdamonds/0/state", "off"));
  EXPECT_TRUE(IsDamonSetting("/sys/kernel/mm/damon/admin/kdamonds/3/state", "on"));
  EXPECT_FALSE(IsDamonSetting("/sys/kernel/mm/damon/admin/kdamonds/0/state", "commit"));
  EXPECT_FALSE(IsDamonSetting("/sys/kernel/mm/damon/admin/kdamonds/0/../../x", "on"));
  EXPECT_TRUE(IsDamonSetting("/sys/module/damon_reclaim/parameters/enabled", "N"));
  EXPECT_FALSE(IsDamonSetting("/sys/module/damon_reclaim/parameters/enabled", "on"));
  EXPECT_TRUE(IsTunableSetting("/sys/kernel/mm/damon/admin/kdamonds/0/state", "on"));
}

}  // namespace
}  // namespace loadbench
