// The queue limits of a file's block device, read from a stand-in sysfs tree (a disk, a partition
// of it, a device without a queue, no device at all) and from this machine's own.
#include "loaders/base/block_limits.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "loaders/base/file_io.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

// SYS/devices/virtual/block/loop3 (a disk) with its queue and a partition loop3p1, linked from
// SYS/dev/block as the kernel links them.
struct StandIn {
  test::TempDir dir;
  fs::path disk = fs::path(dir.path()) / "devices/virtual/block/loop3";
  StandIn() {
    const fs::path q = disk / "queue";
    Write(q / "max_sectors_kb", "1280");
    Write(q / "max_hw_sectors_kb", "2147483647");
    Write(q / "max_segments", "128");
    Write(q / "max_segment_size", "4294967295");
    Write(q / "logical_block_size", "512");
    Write(disk / "loop3p1" / "partition", "1");
    fs::create_directories(fs::path(dir.path()) / "dev/block");
    fs::create_symlink("../../devices/virtual/block/loop3", fs::path(dir.path()) / "dev/block/7:3");
    fs::create_symlink("../../devices/virtual/block/loop3/loop3p1",
                       fs::path(dir.path()) / "dev/block/259:0");
  }
};

TEST(BlockLimits, ADiskReadsItsOwnQueue) {
  StandIn s;
  const BlockLimits l = BlockLimitsOfDevice(makedev(7, 3), s.dir.path());
  ASSERT_TRUE(l.found());
  EXPECT_EQ(l.device, "loop3");
  EXPECT_EQ(l.max_sectors_kb, 1280u);
  EXPECT_EQ(l.max_hw_sectors_kb, 2147483647u);
  EXPECT_EQ(l.max_segments, 128u);
  EXPECT_EQ(l.max_segment_size, 4294967295u);
  EXPECT_EQ(l.logical_block_size, 512u);
}

TEST(BlockLimits, APartitionReadsItsDisksQueue) {
  StandIn s;
  const BlockLimits l = BlockLimitsOfDevice(makedev(259, 0), s.dir.path());
  ASSERT_TRUE(l.found());
  EXPECT_EQ(l.device, "loop3");
  EXPECT_EQ(l.max_sectors_kb, 1280u);
}

TEST(BlockLimits, NoDeviceOrNoQueueIsNotFound) {
  StandIn s;
  EXPECT_FALSE(BlockLimitsOfDevice(makedev(0, 42), s.dir.path()).found());  // overlay, tmpfs
  fs::remove(s.disk / "queue" / "max_segments");
  EXPECT_FALSE(BlockLimitsOfDevice(makedev(7, 3), s.dir.path()).found());
  Write(s.disk / "queue" / "max_segments", "many");
  EXPECT_FALSE(BlockLimitsOfDevice(makedev(7, 3), s.dir.path()).found());
  // The optional ones may be missing.
  Write(s.disk / "queue" / "max_segments", "128");
  fs::remove(s.disk / "queue" / "max_segment_size");
  fs::remove(s.disk / "queue" / "max_hw_sectors_kb");
  const BlockLimits l = BlockLimitsOfDevice(makedev(7, 3), s.dir.path());
  ASSERT_TRUE(l.found());
  EXPECT_EQ(l.max_segment_size, 0u);
  EXPECT_EQ(l.max_hw_sectors_kb, 0u);
}

// A memfd lives on no block device; a file in a temporary folder does where the folder is on a
// disk, whose limits are then those sysfs shows for it.
TEST(BlockLimits, OfAFile) {
  UniqueFd memfd(::memfd_create("block-limits", 0));
  ASSERT_TRUE(memfd.valid());
  EXPECT_FALSE(BlockLimitsOfFile(memfd.get()).found());
  EXPECT_FALSE(BlockLimitsOfFile(-1).found());
  test::TempDir dir;
  const std::string path = dir.File("f");
  std::ofstream(path) << "x";
  UniqueFd fd;
  ASSERT_TRUE(OpenReadOnly(path, 0, &fd).ok());
  const BlockLimits l = BlockLimitsOfFile(fd.get());
  if (!l.found()) GTEST_SKIP() << "the temporary folder is on no block device";
  EXPECT_FALSE(l.device.empty());
  EXPECT_GT(l.max_sectors_kb, 0u);
  EXPECT_GE(l.logical_block_size, 512u);
}

}  // namespace
}  // namespace loadbench
