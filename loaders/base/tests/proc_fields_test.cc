#include "loaders/base/proc_fields.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace loadbench {
namespace {

TEST(ProcFields, KibFieldsAreBytesAndCountsStayCounts) {
  const auto f = ParseProcFields("MemTotal:       16318352 kB\n"
                                 "HugePages_Free:        3\n"
                                 "Hugepagesize:       2048 kB\n"
                                 "read_bytes: 4096\n"
                                 "Name:\tloadbench\n"
                                 "no colon here\n");
  EXPECT_EQ(f.at("MemTotal"), uint64_t{16318352} * 1024);
  EXPECT_EQ(f.at("HugePages_Free"), 3u);
  EXPECT_EQ(f.at("Hugepagesize"), 2048u * 1024);
  EXPECT_EQ(f.at("read_bytes"), 4096u);
  EXPECT_EQ(f.count("Name"), 0u);  // not a number
  EXPECT_EQ(f.size(), 4u);
}

TEST(ProcFields, AFieldOfATextOrNone) {
  EXPECT_EQ(ProcFieldIn(std::string("Dirty:   132 kB\n"), "Dirty"), 132 * 1024);
  EXPECT_EQ(ProcFieldIn(std::string("Dirty:   132 kB\n"), "Writeback"), std::nullopt);
  EXPECT_EQ(ProcFieldIn(std::nullopt, "Dirty"), std::nullopt);
}

TEST(ProcFields, TheMachinesOwnFiles) {
  ASSERT_TRUE(MeminfoBytes("MemTotal").has_value());
  EXPECT_GT(*MeminfoBytes("MemTotal"), uint64_t{64} << 20);
  EXPECT_FALSE(MeminfoBytes("NoSuchField").has_value());
  const auto rss = ProcField("/proc/self/status", "VmRSS");
  ASSERT_TRUE(rss.has_value());
  EXPECT_EQ(*rss % 1024, 0u);  // kB, in bytes
  EXPECT_TRUE(ReadProcFields("/nonexistent/status").empty());
}

}  // namespace
}  // namespace loadbench

namespace loadbench {
namespace {

TEST(ProcStatFields, NumberedAsInProc5) {
  const std::vector<std::string> f = ProcStatFields(::getpid());
  ASSERT_GT(f.size(), 22u);
  EXPECT_EQ(f[3], "R");  // this process, running
  EXPECT_EQ(f[4], std::to_string(::getppid()));
  EXPECT_TRUE(ProcStatFields(-1).empty());
}

}  // namespace
}  // namespace loadbench
