#include "harness/cache/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/cache/cache_internal.h"
#include "tests/support/machine.h"

namespace loadbench {
namespace {

namespace ci = cache_internal;

constexpr size_t kFileBytes = size_t{16} << 20;

// A directory on a disk-backed filesystem: /var/tmp, not /tmp, which may be tmpfs (a tmpfs
// file is its page cache and cannot be dropped). Removed with its contents on destruction.
class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/var/tmp/loadbench_cache_test.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr) << "mkdtemp under /var/tmp failed";
    dir_ = buf.data();
    struct statfs sf {};
    ASSERT_EQ(::statfs(dir_.c_str(), &sf), 0);
    if (sf.f_type == 0x01021994 /* tmpfs */ || sf.f_type == 0x858458f6 /* ramfs */) {
      GTEST_SKIP() << dir_ << " is on tmpfs or ramfs: its pages cannot be evicted";
    }
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  // Writes `bytes` of a pattern and fsyncs them, so that the pages are clean and evictable.
  std::string MakeFile(const std::string& name, size_t bytes) {
    std::string path = dir_ + "/" + name;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0) << path;
    if (fd < 0) return path;
    std::vector<unsigned char> chunk(1 << 20);
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<unsigned char>(i * 131 + 7);
    size_t left = bytes;
    while (left > 0) {
      size_t n = std::min(left, chunk.size());
      ssize_t w = ::write(fd, chunk.data(), n);
      EXPECT_EQ(w, static_cast<ssize_t>(n));
      if (w <= 0) break;
      left -= static_cast<size_t>(w);
    }
    EXPECT_EQ(::fsync(fd), 0);
    ::close(fd);
    return path;
  }

  // Warm then measure, retried: another test process may drop all caches in between.
  static Residency WarmAndMeasure(const std::string& path) {
    Residency r;
    for (int attempt = 0; attempt < 3; ++attempt) {
      EXPECT_TRUE(WarmFile(path).ok());
      Status s = MeasureResidency(path, &r);
      EXPECT_TRUE(s.ok()) << s.message();
      if (r.fraction() >= 0.99) break;
    }
    return r;
  }

  std::string dir_;
};

TEST_F(CacheTest, MethodNames) {
  EXPECT_STREQ(DropMethodName(DropMethod::kDropCaches), "drop_caches");
  EXPECT_STREQ(DropMethodName(DropMethod::kFadvise), "fadvise");
  std::string m = ResidencyMethod();
  EXPECT_TRUE(m == "cachestat" || m == "mincore") << m;
  EXPECT_EQ(m == "cachestat", ci::CachestatAvailable());
}

TEST_F(CacheTest, TotalPagesMatchSize) {
  Residency r;
  std::string a = MakeFile("a", kFileBytes);
  ASSERT_TRUE(MeasureResidency(a, &r).ok());
  EXPECT_EQ(r.total_pages, kFileBytes / 4096);
  EXPECT_LE(r.resident_pages, r.total_pages);

  std::string b = MakeFile("b", 10000);  // 2 full pages and a partial one
  ASSERT_TRUE(MeasureResidency(b, &r).ok());
  EXPECT_EQ(r.total_pages, 3u);
  ASSERT_TRUE(WarmFile(b).ok());
  ASSERT_TRUE(MeasureResidency(b, &r).ok());
  EXPECT_LE(r.resident_pages, 3u);
}

TEST_F(CacheTest, WarmThenDrop) {
  std::string path = MakeFile("weights.bin", kFileBytes);
  Residency r = WarmAndMeasure(path);
  EXPECT_GE(r.fraction(), 0.99) << r.resident_pages << "/" << r.total_pages;
  EXPECT_EQ(r.total_pages, kFileBytes / 4096);

  DropMethod used = DropMethod::kFadvise;
  Status s = DropFileCache(path, &used);
  ASSERT_TRUE(s.ok()) << s.message();
  // drop_caches where root may write it, unless the suite asks each file's own drop alone.
  const bool whole = DropsWholeCache() && test::CannotDropCachesReason().empty();
  EXPECT_EQ(used, whole ? DropMethod::kDropCaches : DropMethod::kFadvise)
      << test::CannotDropCachesReason();
  ASSERT_TRUE(MeasureResidency(path, &r).ok());
  EXPECT_LE(r.fraction(), 0.01) << r.resident_pages << "/" << r.total_pages << " resident after "
                                << DropMethodName(used);
}

// A model is as cold as its warmest shard and as warm as its coldest: one shard warm among cold
// ones makes the total small but the cold state unreached.
TEST_F(CacheTest, AModelIsJudgedByItsWorstShard) {
  TensorTable model;
  for (const char* name : {"s1", "s2", "s3"}) {
    ShardInfo shard;
    shard.path = MakeFile(name, 4 << 20);
    shard.file_size = 4 << 20;
    model.shards.push_back(shard);
  }
  DropMethod used = DropMethod::kFadvise;
  ASSERT_TRUE(DropModelCache(model, &used).ok());
  ModelResidency m;
  ASSERT_TRUE(MeasureModelResidency(model, &m).ok());
  EXPECT_LE(m.Worst("cold"), 0.01);
  EXPECT_EQ(m.total.total_pages, 3u * 1024);

  ASSERT_TRUE(WarmFile(model.shards[1].path).ok());
  ASSERT_TRUE(MeasureModelResidency(model, &m).ok());
  EXPECT_GE(m.Worst("cold"), 0.99);  // the warm shard
  EXPECT_LE(m.Worst("warm"), 0.01);  // the cold ones
  EXPECT_NEAR(m.total.fraction(), 1.0 / 3, 0.02);
  EXPECT_FALSE(StartStateProblem("cold", m.Worst("cold")).empty());

  ASSERT_TRUE(WarmModel(model).ok());
  ASSERT_TRUE(MeasureModelResidency(model, &m).ok());
  EXPECT_GE(m.Worst("warm"), 0.99);
  EXPECT_TRUE(StartStateProblem("warm", m.Worst("warm")).empty());
}

// fadvise alone, whatever our privileges: clean, unmapped pages of one file go.
TEST_F(CacheTest, FadviseAloneEvictsCleanFile) {
  std::string path = MakeFile("weights.bin", kFileBytes);
  Residency r = WarmAndMeasure(path);
  ASSERT_GE(r.fraction(), 0.99);
  DropMethod used = DropMethod::kDropCaches;
  ASSERT_TRUE(ci::DropFileCacheImpl(path, /*try_drop_caches=*/false, &used).ok());
  EXPECT_EQ(used, DropMethod::kFadvise);
  ASSERT_TRUE(MeasureResidency(path, &r).ok());
  EXPECT_LE(r.fraction(), 0.01) << r.resident_pages << "/" << r.total_pages;
}

// A file generated a moment ago may still be dirty: the fadvise path writes it back first.
TEST_F(CacheTest, FadviseEvictsDirtyFile) {
  std::string path = dir_ + "/dirty.bin";
  {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    std::vector<char> buf(kFileBytes, 'x');
    ASSERT_EQ(::write(fd, buf.data(), buf.size()), static_cast<ssize_t>(buf.size()));
    ::close(fd);  // no fsync
  }
  DropMethod used;
  ASSERT_TRUE(ci::DropFileCacheImpl(path, /*try_drop_caches=*/false, &used).ok());
  Residency r;
  ASSERT_TRUE(MeasureResidency(path, &r).ok());
  EXPECT_LE(r.fraction(), 0.01) << r.resident_pages << "/" << r.total_pages;
}

TEST_F(CacheTest, CachestatAndMincoreAgree) {
  if (!ci::CachestatAvailable()) GTEST_SKIP() << "cachestat(2) is not available here";
  std::string path = MakeFile("half.bin", kFileBytes);
  WarmAndMeasure(path);
  // Evict the second half only, for a partial state that both methods must count alike.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::posix_fadvise(fd, kFileBytes / 2, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);

  Residency by_cachestat, by_mincore, by_auto;
  Status s = ci::MeasureResidencyWith(ci::ResidencyImpl::kCachestat, path, &by_cachestat);
  ASSERT_TRUE(s.ok()) << s.message();
  s = ci::MeasureResidencyWith(ci::ResidencyImpl::kMincore, path, &by_mincore);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(MeasureResidency(path, &by_auto).ok());
  EXPECT_EQ(by_cachestat.total_pages, by_mincore.total_pages);
  EXPECT_EQ(by_cachestat.resident_pages, by_mincore.resident_pages);
  EXPECT_EQ(by_auto.resident_pages, by_cachestat.resident_pages);
  // Large folios straddling the midpoint may stay: roughly half, not all, not none.
  EXPECT_GE(by_mincore.fraction(), 0.4);
  EXPECT_LE(by_mincore.fraction(), 0.9);
}

TEST_F(CacheTest, MincoreSeesWarmAndCold) {
  std::string path = MakeFile("m.bin", kFileBytes);
  WarmAndMeasure(path);
  Residency r;
  ASSERT_TRUE(ci::MeasureResidencyWith(ci::ResidencyImpl::kMincore, path, &r).ok());
  EXPECT_GE(r.fraction(), 0.99);
  ASSERT_TRUE(ci::DropFileCacheImpl(path, false, nullptr).ok());
  ASSERT_TRUE(ci::MeasureResidencyWith(ci::ResidencyImpl::kMincore, path, &r).ok());
  EXPECT_LE(r.fraction(), 0.01);
  EXPECT_EQ(r.total_pages, kFileBytes / 4096);
}

TEST_F(CacheTest, EmptyFile) {
  std::string path = MakeFile("empty.bin", 0);
  for (auto impl : {ci::ResidencyImpl::kAuto, ci::ResidencyImpl::kMincore}) {
    Residency r{5, 5};
    Status s = ci::MeasureResidencyWith(impl, path, &r);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(r.resident_pages, 0u);
    EXPECT_EQ(r.total_pages, 0u);
    EXPECT_EQ(r.fraction(), 0.0);
  }
  EXPECT_TRUE(WarmFile(path).ok());
  EXPECT_TRUE(ci::DropFileCacheImpl(path, false, nullptr).ok());
}

TEST_F(CacheTest, MissingFileIsBadInputNamingPath) {
  std::string path = dir_ + "/does-not-exist.bin";
  Residency r;
  Status s = MeasureResidency(path, &r);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  s = WarmFile(path);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  DropMethod used;
  s = ci::DropFileCacheImpl(path, false, &used);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

TEST_F(CacheTest, DirectoryIsBadInput) {
  Residency r;
  Status s = MeasureResidency(dir_, &r);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(dir_), std::string::npos) << s.message();
}

}  // namespace
}  // namespace loadbench

namespace loadbench {
namespace {

// Without privilege, a file we neither own nor may write cannot be checked: cachestat refuses
// and mincore would report it fully resident. The measurement must say so, not answer 100%.
TEST_F(CacheTest, UnprivilegedOnAForeignFileIsUnsupported) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  const std::string path = MakeFile("foreign.wlf", 1 << 20);  // root's, mode 0644
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(3);
    Residency r;
    Status s = MeasureResidency(path, &r);
    if (s.code() != Status::Code::kUnsupported) _exit(1);
    _exit(s.message().find("cannot be checked") != std::string::npos ? 0 : 2);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "1: not kUnsupported, 2: wrong message, 3: setresuid failed";
}

// The gates, in literal figures (design.md: a cold run starts at most 1% resident, a warm one
// at least 99%), not in the code's own constants: a changed constant fails here.
TEST(StartState, ColdAllowsAtMostOnePercentResident) {
  EXPECT_EQ(StartStateProblem("cold", 0.0), "");
  EXPECT_EQ(StartStateProblem("cold", 0.009), "");
  EXPECT_EQ(StartStateProblem("cold", 0.01), "");
  EXPECT_EQ(StartStateProblem("cold", 0.011), "cold run started 1.1% resident (limit 1%)");
  EXPECT_EQ(StartStateProblem("cold", 0.3), "cold run started 30.0% resident (limit 1%)");
  EXPECT_EQ(StartStateProblem("cold", 1.0), "cold run started 100.0% resident (limit 1%)");
}

TEST(StartState, WarmNeedsNinetyNinePercentResident) {
  EXPECT_EQ(StartStateProblem("warm", 1.0), "");
  EXPECT_EQ(StartStateProblem("warm", 0.99), "");
  EXPECT_EQ(StartStateProblem("warm", 0.985), "warm run started only 98.5% resident (need 99%)");
  EXPECT_EQ(StartStateProblem("warm", 0.5), "warm run started only 50.0% resident (need 99%)");
  EXPECT_EQ(StartStateProblem("warm", 0.0), "warm run started only 0.0% resident (need 99%)");
}

TEST(StartState, AWarmRunMayReadAtMostOnePercentFromStorage) {
  const uint64_t file = 1000u << 20;
  EXPECT_EQ(WarmReadProblem(0, file), "");
  // 0.5%: the warm io_uring row of docs/strategies.md read 5 MB.
  EXPECT_EQ(WarmReadProblem(5u << 20, file), "");
  EXPECT_EQ(WarmReadProblem(10u << 20, file), "");  // 1.0%
  EXPECT_EQ(WarmReadProblem(20u << 20, file),
            "warm run read 20.00 MiB (2.0% of the file) from storage (limit 1%): the page cache "
            "lost the file during the run");
}

}  // namespace
}  // namespace loadbench
