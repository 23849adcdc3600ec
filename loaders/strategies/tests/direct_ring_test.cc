// The direct_ring strategy loads one file and a model of three shards byte for byte under every
// option that changes its ring (windows, window size, depth, tensors larger than a window),
// reports its ring, and names the file at fault in its errors. Skipped where io_uring is off.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/format/model.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "tests/support/model_loads.h"
#include "tests/support/scoped_mount.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using test::Detail;
using test::ExpectExact;
using test::Generated;
using test::GeneratedFiles;
using test::JoinFiles;
using test::Loaded;
using test::LoadTable;
using test::Unsupported;

#define SKIP_WITHOUT_IO_URING()                                                              \
  do {                                                                                       \
    if (std::string why = FindStrategy("direct_ring")->unsupported_reason(); !why.empty()) { \
      GTEST_SKIP() << "io_uring unavailable: " << why;                                       \
    }                                                                                        \
  } while (0)

class DirectRingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DirectRingTest, LoadsOneFileAndAThreeShardModelExactly) {
  SKIP_WITHOUT_IO_URING();
  const GeneratedFiles& f = Generated();
  for (const std::string& path : f.singles) {
    TensorTable table;
    ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
    ASSERT_TRUE(table.expected_checksum.has_value());
    Loaded l;
    const Status s = LoadTable(GetParam(), path, table, &l);
    if (Unsupported(s)) GTEST_SKIP() << s.message();
    ASSERT_TRUE(s.ok()) << s.message();
    ExpectExact(table, l, GetParam() + " on " + path);
  }
  ASSERT_EQ(f.model.shards.size(), 3u);
  Loaded l;
  const Status s = LoadTable(GetParam(), f.dir.File("model.index.json"), f.model, &l);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectExact(f.model, l, GetParam() + " on the model");
}

// The files' largest tensors are 64 KiB and 22016 bytes: 4, 8 and 12 KiB windows cut them into
// many pieces, each window holding the end of one tensor and the start of the next; depth=1
// reads one window at a time, depth 2 of 3 and 3 of 8 leave windows idle, one window of 4 KiB
// is the smallest ring.
INSTANTIATE_TEST_SUITE_P(DirectRing, DirectRingTest,
                         ::testing::Values("direct_ring", "direct_ring:depth=1",
                                           "direct_ring:windows=2:window=8KiB",
                                           "direct_ring:windows=2:window=4KiB:depth=1",
                                           "direct_ring:windows=3:window=12KiB:depth=2",
                                           "direct_ring:windows=8:window=4KiB:depth=3",
                                           "direct_ring:windows=1:window=4KiB",
                                           "direct_ring:buffer=thp",
                                           "direct_ring:windows=2:window=8KiB:buffer=thp"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

TEST(DirectRingDetails, SayTheRing) {
  SKIP_WITHOUT_IO_URING();
  const TensorTable& model = Generated().model;
  Loaded l;
  const Status s =
      LoadTable("direct_ring:windows=3:window=8KiB", Generated().dir.File("m"), model, &l);
  if (Unsupported(s)) GTEST_SKIP() << s.message();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Detail(l, "windows"), 3u);
  EXPECT_EQ(Detail(l, "window_bytes"), 8192u);
  EXPECT_EQ(Detail(l, "ring_bytes"), 3u * 8192u);
}

// Shards of odd tensors (an empty one, a 1-element one, odd byte counts) at 64-byte alignment,
// and a file whose tensors are all empty (no ring, no read).
TEST(DirectRingModel, LoadsShardsOfOddTensors) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 64, &paths);
  for (const char* spec : {"direct_ring", "direct_ring:windows=2:window=4KiB:depth=1"}) {
    Loaded l;
    const Status s = LoadTable(spec, dir.File("odd.wlf.index.json"), model, &l);
    if (Unsupported(s)) GTEST_SKIP() << s.message();
    ASSERT_TRUE(s.ok()) << spec << ": " << s.message();
    ExpectExact(model, l, spec);
  }
  const std::string hollow = dir.File("hollow.wlf");
  const test::WrittenWlf w =
      test::WriteWlfFile(hollow, {{"a", WlfDType::kF32, {0}}, {"b", WlfDType::kU8, {4, 0}}}, 4096,
                         3);
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(hollow, &table).ok());
  Loaded l;
  ASSERT_TRUE(LoadTable("direct_ring", hollow, table, &l).ok());
  ASSERT_EQ(l.views.size(), 2u);
  EXPECT_TRUE(l.views[0].empty());
  EXPECT_TRUE(l.views[1].empty());
  EXPECT_EQ(ChecksumTensors(l.views), w.checksum);
  EXPECT_EQ(Detail(l, "ring_bytes"), 0u);
}

TEST(DirectRingErrors, AMissingShardIsBadInputNamingIt) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 4096, &paths);
  ASSERT_EQ(::unlink(paths[1].c_str()), 0);
  Loaded l;
  const Status s = LoadTable("direct_ring", dir.File("odd.wlf.index.json"), model, &l);
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
  EXPECT_NE(s.message().find(paths[1]), std::string::npos) << s.message();
}

// A shard cut short after its table was read: the read that meets its end reports it, naming
// that shard, after every read in flight has been reaped.
TEST(DirectRingErrors, ATruncatedShardIsBadInputNamingIt) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 4096, &paths);
  const uint64_t size = model.shards[2].file_size;
  ASSERT_EQ(::truncate(paths[2].c_str(), static_cast<off_t>(size / 2 + 100)), 0);
  for (const char* spec : {"direct_ring", "direct_ring:windows=2:window=4KiB:depth=1"}) {
    Loaded l;
    const Status s = LoadTable(spec, dir.File("odd.wlf.index.json"), model, &l);
    if (Unsupported(s)) GTEST_SKIP() << s.message();
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << spec << ": " << s.message();
    EXPECT_NE(s.message().find(paths[2]), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  }
}

// A window that O_DIRECT cannot read, and more reads in flight than windows to read into, are
// refused rather than silently changed: the results would record options that were not used.
TEST(DirectRingErrors, RefusesAWindowNotAMultipleOfAPageAndADepthPastTheWindows) {
  SKIP_WITHOUT_IO_URING();
  const std::string& path = Generated().singles[0];
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  for (const char* spec : {"direct_ring:window=5000", "direct_ring:windows=2:depth=3"}) {
    Loaded l;
    const Status s = LoadTable(spec, path, table, &l);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << spec << ": " << s.message();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
}

// ramfs has no direct I/O: unsupported, naming the file.
TEST(DirectRingErrors, AFilesystemWithoutODirectIsUnsupported) {
  SKIP_WITHOUT_IO_URING();
  test::ScopedMount ramfs("ramfs");
  if (!ramfs.ok()) GTEST_SKIP() << ramfs.why();
  const std::string path = ramfs.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  Loaded l;
  const Status s = LoadTable("direct_ring", path, table, &l);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("O_DIRECT"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace loadbench
