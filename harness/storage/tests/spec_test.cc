// A storage as written: its kinds and options, the labels the records carry, the device class
// presets and how a preset and the figures given around it combine, and each bad input refused
// in one line that says what is taken. No root needed.
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/storage/parts.h"
#include "harness/storage/storage.h"

namespace loadbench {
namespace {

StorageSpec Parsed(const std::string& text) {
  StorageSpec s;
  Status st = ParseStorage(text, &s);
  EXPECT_TRUE(st.ok()) << text << ": " << st.message();
  return s;
}

std::string ParseError(const std::string& text) {
  StorageSpec s;
  Status st = ParseStorage(text, &s);
  EXPECT_EQ(st.code(), Status::Code::kBadInput) << text;
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  return st.message();
}

TEST(StorageSpecTest, EveryKindParsesAndOnlyLoopBackedOnesHaveADevice) {
  for (const std::string& kind : StorageKinds()) {
    const StorageSpec s = Parsed(kind);
    EXPECT_EQ(s.kind, kind);
    EXPECT_EQ(s.label, kind);
    EXPECT_EQ(s.made(), kind != "here");
  }
  for (const char* k : {"ext4", "xfs", "btrfs", "squashfs", "erofs", "overlay"}) {
    EXPECT_TRUE(Parsed(k).loop_backed()) << k;
  }
  for (const char* k : {"here", "tmpfs", "fuse"}) EXPECT_FALSE(Parsed(k).loop_backed()) << k;
}

TEST(StorageSpecTest, TheLabelIsTheKindAndItsOptionsAsGiven) {
  EXPECT_EQ(Parsed("xfs:read_bps=400MB:read_iops=1500").label, "xfs:read_bps=400MB:read_iops=1500");
  EXPECT_EQ(Parsed("squashfs:compress=lz4").label, "squashfs:compress=lz4");
  EXPECT_EQ(Parsed("squashfs").label, "squashfs");  // its default compression is not said
  EXPECT_EQ(Parsed("fuse:cache=full:chunk=16MiB").label, "fuse:cache=full:chunk=16MiB");
  EXPECT_EQ(Parsed("ext4:read_bps=1GiB").label, "ext4:read_bps=1GiB");
  EXPECT_EQ(Parsed("ext4:read_bps=125MiB").label, "ext4:read_bps=125MiB");
  EXPECT_EQ(Parsed("btrfs:compress=zstd:label=mine").label, "mine");
  const StorageSpec s = Parsed("xfs:read_bps=400MB");
  EXPECT_EQ(s.device.read_bps, 400'000'000u);  // MB: 10^6 bytes
  EXPECT_EQ(s.device.read_iops, 0u);
  EXPECT_TRUE(s.device.on());
}

TEST(StorageSpecTest, APresetGivesItsFiguresAndLaterOnesOverrideThem) {
  const StorageSpec gp3 = Parsed("ext4:preset=gp3");
  EXPECT_EQ(gp3.device.read_bps, 125u << 20);  // AWS gives MiB/s
  EXPECT_EQ(gp3.device.read_iops, 3000u);
  EXPECT_EQ(gp3.label, "ext4:preset=gp3");
  const StorageSpec over = Parsed("ext4:preset=gp3:read_iops=6000");
  EXPECT_EQ(over.device.read_bps, 125u << 20);
  EXPECT_EQ(over.device.read_iops, 6000u);
  EXPECT_EQ(over.label, "ext4:preset=gp3:read_iops=6000");
  // A preset given after a figure does not undo it.
  const StorageSpec before = Parsed("ext4:read_iops=6000:preset=gp3");
  EXPECT_EQ(before.device.read_iops, 6000u);
  EXPECT_EQ(before.device.read_bps, 125u << 20);
  // A second preset replaces the first one's figures.
  const StorageSpec two = Parsed("xfs:preset=hdd:preset=sata_ssd");
  EXPECT_EQ(two.device.read_bps, 560'000'000u);
  EXPECT_EQ(two.device.read_iops, 98'000u);
  EXPECT_EQ(two.device.preset, "sata_ssd");
}

TEST(StorageSpecTest, ThePresetsAreThoseDocumentedWithTheirSources) {
  std::vector<std::string> names;
  for (const DevicePreset& p : DevicePresets()) {
    names.push_back(p.name);
    EXPECT_GT(p.read_bps, 0u) << p.name;
    EXPECT_GT(p.read_iops, 0u) << p.name;
    EXPECT_NE(std::string(p.source).find("http"), std::string::npos) << p.name;
    EXPECT_FALSE(std::string(p.what).empty()) << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"hdd", "sata_ssd", "gp3", "gp3_max"}));
  // docs/storage.md's table has a row of each, with its reads per second as written there.
  std::ifstream in(std::string(LOADBENCH_SOURCE_DIR) + "/docs/storage.md");
  const std::string docs((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const DevicePreset& p : DevicePresets()) {
    EXPECT_NE(docs.find(fmt::format("| `{}` |", p.name)), std::string::npos) << p.name;
    std::string iops = std::to_string(p.read_iops);  // with the docs' thousands commas
    for (int at = static_cast<int>(iops.size()) - 3; at > 0; at -= 3) iops.insert(at, ",");
    EXPECT_NE(docs.find("| " + iops + " |"), std::string::npos) << p.name;
  }
  const StorageSpec max = Parsed("erofs:preset=gp3_max");
  EXPECT_EQ(max.device.read_bps, 1000u << 20);
  EXPECT_EQ(max.device.read_iops, 16000u);
}

TEST(StorageSpecTest, BadInputSaysWhatIsTaken) {
  EXPECT_NE(ParseError("zfs").find("the kinds: here, ext4, xfs, btrfs, squashfs, erofs, overlay, "
                                   "tmpfs, fuse"),
            std::string::npos);
  EXPECT_NE(ParseError("xfs:compress=zstd")
                .find("xfs takes no option compress (it takes: "
                      "read_bps, read_iops, preset, label)"),
            std::string::npos);
  EXPECT_NE(ParseError("ext4:preset=nvme").find("the presets: hdd, sata_ssd, gp3, gp3_max"),
            std::string::npos);
  EXPECT_NE(ParseError("ext4:read_bps=0").find("read_bps=0"), std::string::npos);
  EXPECT_NE(ParseError("ext4:read_iops=0").find("read_iops=0"), std::string::npos);
  EXPECT_NE(ParseError("ext4:read_iops=12x").find("not a whole number"), std::string::npos);
  EXPECT_NE(ParseError("ext4:read_bps=fast").find("not a size"), std::string::npos);
  EXPECT_NE(
      ParseError("squashfs:compress=brotli").find("(it takes: none, gzip, lz4, zstd, xz, lzo)"),
      std::string::npos);
  const std::string lzma = ParseError("erofs:compress=lzma");
  EXPECT_NE(lzma.find("without lzma"), std::string::npos) << lzma;
  EXPECT_NE(lzma.find("(it takes: none, lz4, lz4hc)"), std::string::npos) << lzma;
  EXPECT_NE(ParseError("btrfs:compress=lz4").find("(it takes: none, zstd, lzo, zlib)"),
            std::string::npos);
  EXPECT_NE(ParseError("tmpfs:read_bps=1GB").find("tmpfs has no loop device to throttle"),
            std::string::npos);
  EXPECT_NE(ParseError("fuse:preset=gp3").find("fuse has no loop device"), std::string::npos);
  EXPECT_NE(ParseError("here:read_iops=100").find("here has no loop device"), std::string::npos);
  EXPECT_NE(ParseError("fuse:cache=some").find("(it takes: off, full)"), std::string::npos);
  EXPECT_NE(ParseError("fuse:chunk=big").find("not a size"), std::string::npos);
  EXPECT_NE(ParseError("ext4:read_bps").find("not OPTION=VALUE"), std::string::npos);
  EXPECT_NE(ParseError("ext4:label=").find("empty storage label"), std::string::npos);
}

TEST(StorageSpecTest, SetStorageOptionChecksAsParseDoes) {
  StorageSpec s;
  s.kind = "btrfs";
  ASSERT_TRUE(SetStorageOption("compress", "zstd", &s).ok());
  ASSERT_TRUE(SetStorageOption("compress", "lzo", &s).ok());  // given again: replaced in place
  ASSERT_TRUE(SetStorageOption("read_bps", "100MB", &s).ok());
  EXPECT_EQ(s.options.size(), 1u);
  EXPECT_EQ(LabelOf(s), "btrfs:compress=lzo:read_bps=100MB");
  EXPECT_EQ(SetStorageOption("cache", "off", &s).code(), Status::Code::kBadInput);
}

TEST(StorageSpecTest, BackingFilesHoldTheModelAndWhatMkfsTakes) {
  const uint64_t mib = uint64_t{1} << 20;
  EXPECT_EQ(BackingBytes("xfs", 8 * mib), 300 * mib);
  EXPECT_EQ(BackingBytes("btrfs", 8 * mib), 114 * mib);
  EXPECT_GE(BackingBytes("ext4", 10000 * mib), 11500 * mib);
  EXPECT_EQ(BackingBytes("ext4", 0) % mib, 0u);
}

TEST(StorageSpecTest, AMissingProgramIsNamedWithItsPackage) {
  std::string path;
  const Status st = FindTool("loadbench-no-such-mkfs", "xfsprogs", &path);
  EXPECT_EQ(st.code(), Status::Code::kUnsupported);
  EXPECT_NE(st.message().find("command not found: loadbench-no-such-mkfs"), std::string::npos);
  EXPECT_NE(st.message().find("install Debian's xfsprogs"), std::string::npos) << st.message();
  ASSERT_TRUE(FindTool("losetup", "mount", &path).ok());  // in /usr/sbin even off PATH
  EXPECT_EQ(path.front(), '/');
}

TEST(StorageSpecTest, WithoutRootNothingButHereCanBeMade) {
  if (::geteuid() == 0) GTEST_SKIP() << "runs as root: the refusal of others is not seen";
  EXPECT_EQ(StorageUnavailable(Parsed("here"), 1 << 20), "");
  EXPECT_EQ(StorageUnavailable(Parsed("xfs"), 1 << 20),
            "making a storage needs root; the `here` kind works without");
}

TEST(StorageSpecTest, TooLittleRoomIsSaidWithHowMuch) {
  if (::geteuid() != 0) GTEST_SKIP() << "the checks before space need root";
  const std::string why = StorageUnavailable(Parsed("ext4"), uint64_t{1} << 60);
  EXPECT_NE(why.find("needs"), std::string::npos) << why;
  EXPECT_NE(why.find("free in /tmp"), std::string::npos) << why;
  const std::string memory = StorageUnavailable(Parsed("tmpfs"), uint64_t{1} << 60);
  EXPECT_NE(memory.find("of memory"), std::string::npos) << memory;
}

}  // namespace
}  // namespace loadbench
