// Settling before the first run: how much is touched, and that the touch touches it.
#include "harness/machine/settle.h"

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = kMiB << 10;

std::string FakeMeminfo(const test::TempDir& dir, uint64_t available_kb) {
  std::ofstream(dir.path() + "/meminfo") << "MemTotal:       25000000 kB\n"
                                         << "MemAvailable:   " << available_kb << " kB\n";
  return dir.path();
}

TEST(Settle, TouchesTwiceTheModelWithinWhatIsAvailable) {
  test::TempDir dir;
  EXPECT_EQ(SettleBytes(2 * kGiB, FakeMeminfo(dir, 20 * kGiB / 1024)), 4 * kGiB);
  // 3 GiB available: 1 GiB stays free.
  EXPECT_EQ(SettleBytes(2 * kGiB, FakeMeminfo(dir, 3 * kGiB / 1024)), 2 * kGiB);
  EXPECT_EQ(SettleBytes(2 * kGiB, FakeMeminfo(dir, kGiB / 1024)), 0u);
  EXPECT_EQ(SettleBytes(2 * kGiB, dir.path() + "/none"), 0u);
}

TEST(Settle, TouchesEveryPageOnce) {
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const Settled s = SettleMemory(64 * kMiB);
  getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(s.bytes, 64 * kMiB);
  EXPECT_GT(s.seconds, 0);
  // One fault a 4 KiB page at least (fewer only where the kernel gave huge pages).
  const long faults = after.ru_minflt - before.ru_minflt;
  EXPECT_GE(faults, 64 * 1024 / 4 / 512) << faults;
  EXPECT_EQ(SettleMemory(0).bytes, 0u);
}

}  // namespace
}  // namespace loadbench
