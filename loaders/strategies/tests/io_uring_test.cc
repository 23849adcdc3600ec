// The io_uring strategy loads small files byte for byte under every option that changes its
// read loop, counts its requests exactly, reports truncated files as bad input, and reports a
// kernel or filesystem that cannot do what was asked as unsupported.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "loaders/blocks/destination.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "tests/support/scoped_mount.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

constexpr const char* kDisabledSysctl = "/proc/sys/kernel/io_uring_disabled";

struct Loaded {
  Params params;
  TensorTable table;
  std::unique_ptr<Loader> loader;  // owns the memory the views point into
  std::vector<TensorBytes> views;
};

// Loads `path`, whose tensor table is `table`, with "io_uring" plus `options`
// ("qd=1:chunk=4KiB", or "").
Status LoadTable(const std::string& options, const std::string& path, const TensorTable& table,
                 Loaded* out) {
  std::vector<StrategySpec> specs;
  LB_RETURN_IF_ERROR(
      ParseStrategyList(options.empty() ? "io_uring" : "io_uring:" + options, &specs));
  const StrategyInfo* info = FindStrategy("io_uring");
  LB_RETURN_IF_ERROR(Params::Resolve(info->name, info->options, specs[0].options, &out->params));
  out->table = table;
  out->loader = info->make(out->params);
  return out->loader->Load(path, out->table, &out->views);
}

// As LoadTable, with the table read from `path`.
Status LoadWith(const std::string& options, const std::string& path, Loaded* out) {
  TensorTable table;
  LB_RETURN_IF_ERROR(ReadTensorTableFromPath(path, &table));
  return LoadTable(options, path, table, out);
}

uint64_t Count(const Loaded& loaded, const char* key) {
  return loaded.loader->Details().at(key).get<uint64_t>();
}

// The requests a load must submit: one per chunk of what it reads, plus one per requeue.
uint64_t ExpectedRequests(const Loaded& l) {
  const FileSpan span = TensorSpan(l.table, 4096);
  const uint64_t end = l.params.On("direct") ? span.end : std::min(span.end, l.table.file_size);
  const uint64_t chunk = l.params.Bytes("chunk");
  return (end - span.begin + chunk - 1) / chunk + Count(l, "short_reads_requeued") +
         Count(l, "eagain_retries") + Count(l, "eintr_retries");
}

#define SKIP_WITHOUT_IO_URING()                                                           \
  do {                                                                                    \
    if (std::string why = FindStrategy("io_uring")->unsupported_reason(); !why.empty()) { \
      GTEST_SKIP() << "io_uring unavailable: " << why;                                    \
    }                                                                                     \
  } while (0)

class IoUringStrategyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IoUringStrategyTest, LoadsOddTensorsExactly) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  const auto tensors = test::OddTensors();
  for (uint64_t align : {64u, 4096u}) {
    const std::string path = dir.File("odd.wlf");
    const test::WrittenWlf w = test::WriteWlfFile(path, tensors, align, /*seed=*/align);
    Loaded loaded;
    Status s = LoadWith(GetParam(), path, &loaded);
    if (s.code() == Status::Code::kUnsupported &&
        (s.message().find("transparent huge pages") != std::string::npos ||
         s.message().find("refuses O_DIRECT") != std::string::npos)) {
      GTEST_SKIP() << s.message();
    }
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(loaded.views.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto expected = test::TensorData(align, i, w.layout.tensor_sizes[i]);
      ASSERT_EQ(loaded.views[i].size(), expected.size()) << "tensor " << i;
      if (expected.empty()) continue;  // memcmp may not be given the null data() of nothing
      EXPECT_EQ(std::memcmp(loaded.views[i].data(), expected.data(), expected.size()), 0)
          << GetParam() << ": tensor " << i << " differs (align " << align << ")";
    }
    EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum) << GetParam();
    EXPECT_GT(Count(loaded, "requests_submitted"), 0u);
    EXPECT_EQ(Count(loaded, "requests_submitted"), ExpectedRequests(loaded))
        << GetParam() << ": " << loaded.loader->Details().dump();
  }
}

TEST_P(IoUringStrategyTest, LoadsAFileWithoutTensors) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  const std::string path = dir.File("empty.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, {});
  Loaded loaded;
  Status s = LoadWith(GetParam(), path, &loaded);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(loaded.views.empty());
  EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum);
  EXPECT_EQ(Count(loaded, "requests_submitted"), 0u);
}

// chunk=3 cuts every tensor mid-request; qd=1 and qd=3 keep the ring full and then some; the
// last set combines everything that changes how a request is prepared.
INSTANTIATE_TEST_SUITE_P(IoUring, IoUringStrategyTest,
                         ::testing::Values("", "qd=1", "qd=3:chunk=4KiB", "chunk=3", "direct=on",
                                           "fixed=on", "regfile=on",
                                           "direct=on:fixed=on:regfile=on:qd=2:chunk=8KiB",
                                           "buffer=thp", "fixed=on:chunk=3:qd=7"),
                         [](const auto& info) {
                           std::string n = info.param.empty() ? "defaults" : info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// A 5-page span in 8 KiB requests: the last request is half a chunk, and without O_DIRECT it
// stops at the file's end, inside the last page.
TEST(IoUringLoad, ReadsASpanThatIsNotAMultipleOfTheChunk) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  const std::string path = dir.File("five.wlf");
  const test::WrittenWlf w =
      test::WriteWlfFile(path, {{"five", WlfDType::kU8, {5 * 4096 - 100}}}, 4096, 7);
  for (const char* options : {"chunk=8KiB", "chunk=8KiB:direct=on", "chunk=8KiB:fixed=on:qd=1"}) {
    Loaded loaded;
    Status s = LoadWith(options, path, &loaded);
    ASSERT_TRUE(s.ok()) << options << ": " << s.message();
    ASSERT_EQ(loaded.views.size(), 1u);
    const auto expected = test::TensorData(7, 0, 5 * 4096 - 100);
    ASSERT_EQ(loaded.views[0].size(), expected.size());
    EXPECT_EQ(std::memcmp(loaded.views[0].data(), expected.data(), expected.size()), 0) << options;
    EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum) << options;
    EXPECT_EQ(Count(loaded, "requests_submitted") - Count(loaded, "short_reads_requeued") -
                  Count(loaded, "eagain_retries") - Count(loaded, "eintr_retries"),
              3u)
        << options << ": " << loaded.loader->Details().dump();
  }
}

TEST(IoUringLoad, ATableOfEmptyTensorsNeedsNoIO) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  const std::string path = dir.File("hollow.wlf");
  const test::WrittenWlf w =
      test::WriteWlfFile(path, {{"a", WlfDType::kF32, {0}}, {"b", WlfDType::kU8, {4, 0}}}, 4096, 3);
  for (const char* options : {"", "direct=on:fixed=on:regfile=on"}) {
    Loaded loaded;
    Status s = LoadWith(options, path, &loaded);
    ASSERT_TRUE(s.ok()) << options << ": " << s.message();
    ASSERT_EQ(loaded.views.size(), 2u);
    EXPECT_TRUE(loaded.views[0].empty());
    EXPECT_TRUE(loaded.views[1].empty());
    EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum);
    EXPECT_EQ(Count(loaded, "requests_submitted"), 0u) << options;
  }
}

TEST(IoUringLoad, AMissingFileIsBadInputNamingIt) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  ASSERT_EQ(::unlink(path.c_str()), 0);
  Loaded loaded;
  Status s = LoadTable("", path, table, &loaded);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

// O_DIRECT cannot read at an offset that is not a multiple of the block size, so a chunk that
// is not a multiple of 4096 is refused rather than silently rounded: the results would record
// a chunk that was not the one used.
TEST(IoUringLoad, DirectRefusesAChunkThatIsNotAMultipleOfAPage) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  Loaded loaded;
  Status s = LoadWith("direct=on:chunk=5000", path, &loaded);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("multiple of 4096"), std::string::npos) << s.message();
}

// A file cut short after its header was validated: at a page boundary (an O_DIRECT read comes
// back short, is requeued and then reads nothing) and inside a page (an O_DIRECT read stops
// mid-block).
TEST(IoUringLoad, ATruncatedFileIsBadInputNamingIt) {
  SKIP_WITHOUT_IO_URING();
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  for (uint64_t cut : {4096u, 4096u + 10u}) {
    for (const char* options : {"", "direct=on", "fixed=on:qd=1:chunk=4KiB"}) {
      test::WriteWlfFile(path, test::OddTensors(), 4096);
      TensorTable table;
      ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
      ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(table.data_offset + cut)), 0);
      Loaded loaded;
      Status s = LoadTable(options, path, table, &loaded);
      EXPECT_EQ(s.code(), Status::Code::kBadInput)
          << options << " cut " << cut << ": " << s.message();
      EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(std::to_string(table.data_offset + cut)), std::string::npos)
          << s.message();
    }
  }
}

// Writes `value` to a sysctl file; false when the kernel refuses.
bool WriteSysctl(const char* file, const std::string& value) {
  std::ofstream out(file);
  out << value << '\n';
  out.close();
  return !out.fail();
}

// Sets kernel.io_uring_disabled for its lifetime and restores the old value, also when an
// assertion ends the test early.
class DisabledSysctlGuard final {
 public:
  explicit DisabledSysctlGuard(std::string old) : old_(std::move(old)) {}
  DisabledSysctlGuard(const DisabledSysctlGuard&) = delete;
  DisabledSysctlGuard& operator=(const DisabledSysctlGuard&) = delete;
  ~DisabledSysctlGuard() {
    if (!WriteSysctl(kDisabledSysctl, old_)) {
      ADD_FAILURE() << "could not restore " << kDisabledSysctl << " to " << old_;
    }
  }

 private:
  std::string old_;
};

TEST(IoUringUnsupported, DisabledByTheKernelIsUnsupportedWithTheReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to write " << kDisabledSysctl;
  std::string old;
  {
    std::ifstream in(kDisabledSysctl);
    if (!(in >> old)) GTEST_SKIP() << kDisabledSysctl << " is absent (kernel older than 6.6)";
  }
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  {
    if (!WriteSysctl(kDisabledSysctl, "2")) {
      GTEST_SKIP() << "the kernel refuses writes to " << kDisabledSysctl;
    }
    DisabledSysctlGuard restore(old);
    const std::string why = FindStrategy("io_uring")->unsupported_reason();
    EXPECT_NE(why.find("io_uring_disabled"), std::string::npos) << why;
    Loaded loaded;
    Status s = LoadWith("", path, &loaded);
    EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.message();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
  std::ifstream in(kDisabledSysctl);
  std::string now;
  in >> now;
  EXPECT_EQ(now, old);
}

// ramfs has no direct I/O (tmpfs has had it since Linux 6.6).
TEST(IoUringUnsupported, AFilesystemWithoutODirectIsUnsupportedForDirectOnly) {
  SKIP_WITHOUT_IO_URING();
  test::ScopedMount ramfs("ramfs");
  if (!ramfs.ok()) GTEST_SKIP() << ramfs.why();
  const std::string path = ramfs.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());

  Loaded direct;
  Status s = LoadWith("direct=on", path, &direct);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("O_DIRECT"), std::string::npos) << s.message();

  Loaded buffered;
  s = LoadWith("", path, &buffered);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ChecksumTensors(buffered.views), w.checksum);
}

}  // namespace
}  // namespace loadbench
