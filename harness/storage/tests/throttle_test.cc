// A device class holds this process's cold reads of the storage to its rate once entered, and
// no longer once left (its group gone); and a command killed with a throttled storage up leaves
// a mount, a loop device, a cgroup and folders that the next CleanLeftovers removes, all of them.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "harness/leftovers/leftovers.h"
#include "harness/storage/tests/storage_fixture.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

double SecondsToRead(const std::string& path) {
  test::DropPages(path);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string all = test::ReadWhole(path);
  EXPECT_FALSE(all.empty());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The line of /proc/self/cgroup that names the blkio (or v2) group this process is in.
std::string OwnIoGroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string v2;
  for (std::string line; std::getline(in, line);) {
    if (line.find(":blkio:") != std::string::npos) return line;
    if (line.starts_with("0::")) v2 = line;
  }
  return v2;
}

class StorageThrottleTest : public test::StorageTest {
 protected:
  // An ext4 storage of the model with device class `options` (":read_bps=...").
  void Make(const std::string& options, uint64_t shard_bytes) {
    StorageSpec spec;
    ASSERT_TRUE(ParseStorage("ext4" + options, &spec).ok());
    files_ = WriteModel(shard_bytes);
    if (const std::string why = StorageUnavailable(spec, shard_bytes); !why.empty()) {
      GTEST_SKIP() << why;
    }
    Storage::Made how;
    how.files = files_;
    Status st = Storage::Make(spec, how, &storage_);
    ASSERT_TRUE(st.ok()) << st.message();
  }

  std::vector<std::string> files_;
  std::unique_ptr<Storage> storage_;
};

TEST_F(StorageThrottleTest, ReadsAreHeldToTheRateWhileEntered) {
  Make(":read_bps=10MB", 24 * kMiB);  // 25.2 MB at 10 MB/s: 2.5 s
  if (storage_ == nullptr) return;
  const std::string shard = storage_->PathOf(files_[0]);
  const std::string outside = OwnIoGroup();
  ASSERT_TRUE(storage_->Enter().ok());
  EXPECT_NE(OwnIoGroup(), outside);
  EXPECT_NE(OwnIoGroup().find("/loadbench-"), std::string::npos) << OwnIoGroup();
  const JournalLines entered = Listed();
  const double throttled = SecondsToRead(shard);
  // A floor only (a slow machine may take longer): 2.2 s allows the throttle's first slice,
  // which it lets through before it counts.
  EXPECT_GE(throttled, 2.2) << "read " << 24 * kMiB / throttled / 1e6 << " MB/s";
  ASSERT_TRUE(storage_->Leave().ok());
  EXPECT_EQ(OwnIoGroup(), outside);
  const double free = SecondsToRead(shard);
  // Left, the limit is gone: faster than under it by far (any disk reads above 20 MB/s).
  EXPECT_LT(free, throttled / 2);
  storage_.reset();
  ExpectGone(entered);  // the cgroup with the rest
  EXPECT_TRUE(Listed().empty());
}

TEST_F(StorageThrottleTest, OperationsPerSecondAreHeldToo) {
  Make(":read_iops=20", 4 * kMiB);
  if (storage_ == nullptr) return;
  const std::string shard = storage_->PathOf(files_[0]);
  test::DropPages(shard);
  const int fd = ::open(shard.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // one 4 KiB read per pread: no readahead
  ASSERT_TRUE(storage_->Enter().ok());
  const auto t0 = std::chrono::steady_clock::now();
  char page[4096];
  for (int i = 0; i < 40; ++i) {  // 40 reads at 20 a second: 2 s, less the first slice's
    EXPECT_EQ(::pread(fd, page, sizeof page, static_cast<off_t>(i) * 65536), 4096);
  }
  const double throttled =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(storage_->Leave().ok());
  ::close(fd);
  // A floor only: 1.5 s of the 2 allows the first slice the throttle lets through uncounted.
  EXPECT_GE(throttled, 1.5) << 40 / throttled << " reads/s";
}

TEST_F(StorageThrottleTest, EnterWithoutADeviceClassDoesNothing) {
  Make("", 1 * kMiB);
  if (storage_ == nullptr) return;
  const std::string outside = OwnIoGroup();
  ASSERT_TRUE(storage_->Enter().ok());
  EXPECT_EQ(OwnIoGroup(), outside);
  ASSERT_TRUE(storage_->Leave().ok());
}

TEST_F(StorageThrottleTest, AKilledCommandsStorageIsRemovedByTheNextCleanup) {
  StorageSpec spec;
  ASSERT_TRUE(ParseStorage("ext4:read_bps=100MB", &spec).ok());
  const std::vector<std::string> files = WriteModel(2 * kMiB);
  if (const std::string why = StorageUnavailable(spec, 2 * kMiB); !why.empty()) GTEST_SKIP() << why;
  const pid_t child = ::fork();
  if (child == 0) {
    std::unique_ptr<Storage> s;
    Storage::Made how;
    how.files = files;
    if (!Storage::Make(spec, how, &s).ok() || !s->Enter().ok()) ::_exit(1);
    ::kill(::getpid(), SIGKILL);  // nothing of it removed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child could not make its storage";
  const std::vector<StaleJournal> stale = StaleJournals();
  ASSERT_EQ(stale.size(), 1u);
  const JournalLines& left = stale[0].outstanding;
  int mounts = 0, loops = 0, cgroups = 0, folders = 0;
  for (const auto& [kind, what] : left) {
    mounts += kind == Leftover::kMount && MountedAt(what);
    loops += kind == Leftover::kLoop && !LoopBackingFile(what.substr(0, what.find('\t'))).empty();
    cgroups += kind == Leftover::kIoCgroup && test::PathExists(what);
    folders += kind == Leftover::kFolder && test::PathExists(what);
  }
  EXPECT_EQ(mounts, 1);
  EXPECT_EQ(loops, 1);
  EXPECT_EQ(cgroups, 1);
  EXPECT_EQ(folders, 2);
  const std::vector<std::string> said = CleanLeftovers();
  ASSERT_EQ(said.size(), 1u);
  for (const char* what : {"mount /tmp/loadbench-mnt-", "loop device /dev/loop",
                           "throttling cgroup ", "folder /tmp/loadbench-storage-"}) {
    EXPECT_NE(said[0].find(what), std::string::npos) << said[0];
  }
  EXPECT_EQ(said[0].find("could not"), std::string::npos) << said[0];
  ExpectGone(left);
  EXPECT_TRUE(StaleJournals().empty());
}

}  // namespace
}  // namespace loadbench
