// Destination buffers (malloc, thp, hugetlb), the span arithmetic the span readers rely on, and
// the O_DIRECT refusal path.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "loaders/blocks/destination.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategy/strategy.h"
#include "tests/support/load_with.h"
#include "tests/support/scoped_mount.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using test::LoadWith;

TEST(Destination, SlicesCoverTheRangeOnceWithAlignedStarts) {
  for (uint64_t bytes : {0ull, 1ull, 4095ull, 4096ull, 1000000ull, 8388608ull + 13}) {
    for (unsigned parts : {1u, 2u, 3u, 7u}) {
      const auto slices = SplitIntoSlices(bytes, parts, 4096);
      EXPECT_LE(slices.size(), parts);
      uint64_t at = 0;
      for (const Slice& s : slices) {
        EXPECT_EQ(s.offset, at) << bytes << "/" << parts;
        EXPECT_EQ(s.offset % 4096, 0u);
        EXPECT_GT(s.length, 0u);
        at += s.length;
      }
      EXPECT_EQ(at, bytes) << bytes << "/" << parts;
    }
  }
}

TEST(Destination, TensorSpanIsAlignedAndCoversEveryTensor) {
  TensorTable t;
  t.tensors = {{"a", "u8", {1}, 5000, 10}, {"b", "u8", {0}, 99999, 0}, {"c", "u8", {1}, 8200, 1}};
  const FileSpan span = TensorSpan(t, 4096);
  EXPECT_EQ(span.begin, 4096u);
  EXPECT_EQ(span.end, 12288u);  // the empty tensor at 99999 does not widen it
  EXPECT_EQ(TensorSpan(TensorTable{}, 4096).size(), 0u);
}

TEST(Destination, RegionsAreAlignedWritableAndMayBeEmpty) {
  for (BufferKind kind : {BufferKind::kMalloc, BufferKind::kThp}) {
    Region r;
    ASSERT_TRUE(Region::Allocate(kind, 3 << 20, "f", &r).ok());
    ASSERT_NE(r.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r.data()) % (kind == BufferKind::kThp ? 2 << 20 : 4096),
              0u);
    std::memset(r.data(), 0x5a, r.size());
    EXPECT_EQ(r.size(), 3u << 20);
    Region empty;
    ASSERT_TRUE(Region::Allocate(kind, 0, "f", &empty).ok());
    EXPECT_NE(empty.data(), nullptr);
  }
}

// Reads and writes /proc/sys/vm/nr_hugepages, putting the old value back on destruction.
class HugePageReservation {
 public:
  HugePageReservation() { old_ = Read(); }
  ~HugePageReservation() {
    if (changed_) Write(old_);
  }
  static long Read() {
    std::ifstream in("/proc/sys/vm/nr_hugepages");
    long v = -1;
    in >> v;
    return v;
  }
  bool Set(long n) {
    changed_ = true;
    Write(n);
    return Read() == n;
  }
  long old() const { return old_; }

 private:
  static void Write(long n) { std::ofstream("/proc/sys/vm/nr_hugepages") << n << "\n"; }
  long old_ = -1;
  bool changed_ = false;
};

TEST(Destination, HugetlbWithoutReservedPagesIsUnsupportedWithTheShortfall) {
  HugePageReservation reservation;
  if (reservation.old() != 0) {
    if (::geteuid() != 0)
      GTEST_SKIP() << "huge pages are reserved here and only root may unreserve";
    if (!reservation.Set(0))
      GTEST_SKIP() << "huge pages are reserved and nr_hugepages is not "
                      "writable here (a read-only /proc/sys)";
  }
  Region r;
  Status s = Region::Allocate(BufferKind::kHugetlb, 5 << 20, "model.wlf", &r);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported);
  EXPECT_NE(s.message().find("needs 3 huge pages"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("nr_hugepages"), std::string::npos) << s.message();
}

TEST(Destination, HugetlbBuffersLoadExactlyWhereHugePagesAreReserved) {
  if (::geteuid() != 0) GTEST_SKIP() << "reserving huge pages needs root";
  HugePageReservation reservation;
  if (!reservation.Set(reservation.old() + 8)) {
    GTEST_SKIP() << "the kernel could not reserve 8 more huge pages (memory fragmented, or a "
                    "read-only /proc/sys)";
  }
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors(), 4096, 3);
  for (const char* text : {"pread:buffer=hugetlb", "odirect:buffer=hugetlb", "fread:buffer=hugetlb",
                           "pread_mt:buffer=hugetlb:threads=2", "io_uring:buffer=hugetlb"}) {
    std::unique_ptr<Loader> loader;
    std::vector<TensorBytes> views;
    Status s = LoadWith(text, path, &loader, &views);
    ASSERT_TRUE(s.ok()) << text << ": " << s.message();
    EXPECT_EQ(ChecksumTensors(views), w.checksum) << text;
  }
}

TEST(Odirect, AChunkThatODirectCannotUseIsBadInput) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  std::unique_ptr<Loader> loader;
  std::vector<TensorBytes> views;
  Status s = LoadWith("odirect:chunk=6000", path, &loader, &views);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("not a multiple of the"), std::string::npos) << s.message();
}

// ramfs has no direct I/O at all: open(O_DIRECT) fails with EINVAL.
TEST(Odirect, AFilesystemThatRefusesODirectGivesUnsupported) {
  test::ScopedMount ramfs("ramfs");
  if (!ramfs.ok()) GTEST_SKIP() << ramfs.why();
  const std::string path = ramfs.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  std::unique_ptr<Loader> loader;
  std::vector<TensorBytes> views;
  Status s = LoadWith("odirect", path, &loader, &views);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find("refuses O_DIRECT"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

// tmpfs refused O_DIRECT until Linux 6.6 and accepts it since: either answer is fine, a wrong
// byte or a crash is not.
TEST(Odirect, OnTmpfsEitherLoadsExactlyOrIsUnsupported) {
  test::ScopedMount tmpfs("tmpfs");
  if (!tmpfs.ok()) GTEST_SKIP() << tmpfs.why();
  const std::string path = tmpfs.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());
  std::unique_ptr<Loader> loader;
  std::vector<TensorBytes> views;
  Status s = LoadWith("odirect", path, &loader, &views);
  if (s.code() == Status::Code::kUnsupported) {
    EXPECT_NE(s.message().find("refuses O_DIRECT"), std::string::npos) << s.message();
  } else {
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(ChecksumTensors(views), w.checksum);
  }
}

}  // namespace
}  // namespace loadbench
