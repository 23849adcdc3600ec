// mlock: loads byte-exactly, leaves the data area locked until the loader goes, raises a low
// soft RLIMIT_MEMLOCK, and refuses with a reason (without trying) what it cannot lock.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

constexpr rlim_t k64KiB = 64 << 10;

std::unique_ptr<Loader> MakeMlock() {
  Params params;
  EXPECT_TRUE(Params::Resolve("mlock", FindStrategy("mlock")->options, {}, &params).ok());
  return FindStrategy("mlock")->make(params);
}

Status LoadMlock(const std::string& path, std::unique_ptr<Loader>* loader,
                 std::vector<TensorBytes>* views) {
  TensorTable table;
  LB_RETURN_IF_ERROR(ReadTensorTableFromPath(path, &table));
  *loader = MakeMlock();
  return (*loader)->Load(path, table, views);
}

// One "Key: N" field of a /proc file (in kB for the memory ones); 0 when absent.
uint64_t ProcField(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(key + ":")) {
      return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10);
    }
  }
  return 0;
}

// A file whose one tensor of `bytes` is a hole: as large as needed, costing no disk or memory
// until read. Returns the path.
std::string WriteSparseWlf(const test::TempDir& dir, uint64_t bytes) {
  const std::vector<WlfTensorSpec> tensors = {{"big", WlfDType::kU8, {bytes}}};
  FileLayout layout;
  EXPECT_TRUE(PlanWlf(tensors, 4096, &layout).ok());
  const std::string path = dir.File("sparse.wlf");
  test::WriteFileBytes(path, EncodeWlfHead(tensors, layout, /*flags=*/0, 0, 0));
  const WlfTail tail = EncodeWlfTail(layout);
  test::PatchBytes(path, layout.data_end, &tail, sizeof tail);
  return path;
}

// What a forked child saw: its Load result, or why it could not get that far.
struct ChildResult {
  std::string code;  // Status::code_name(), or "skip" with the reason in `message`
  std::string message;
};

// Runs `body` in a forked child with RLIMIT_MEMLOCK set to `soft` (and the hard limit to `hard`),
// as user nobody (65534) when we are root, since root is not held to the limit. The child sends
// back the Status `body` returns. `dir` is made readable to nobody.
ChildResult RunLimited(const test::TempDir& dir, rlim_t soft, rlim_t hard,
                       const std::function<Status()>& body) {
  EXPECT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  if (pid < 0) return {"none", "fork failed"};
  if (pid == 0) {
    ::close(fds[0]);
    auto send = [&](std::string code, const std::string& message) {
      const std::string text = code + "\n" + message;
      _exit(WriteExact(fds[1], "pipe", text.data(), text.size()).ok() ? 0 : 1);
    };
    const rlimit lim{soft, hard};
    if (::geteuid() == 0) {
      // The limits first: only root may raise the hard limit to what the test asks.
      if (::setrlimit(RLIMIT_MEMLOCK, &lim) != 0) send("skip", "setrlimit failed");
      if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
        send("skip", "cannot become user nobody");
      }
    } else if (::setrlimit(RLIMIT_MEMLOCK, &lim) != 0) {
      send("skip", "the hard RLIMIT_MEMLOCK is below what the test needs");
    }
    const Status s = body();
    send(std::string(s.code_name()), s.message());
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int st = 0;
  EXPECT_EQ(::waitpid(pid, &st, 0), pid);
  EXPECT_TRUE(WIFEXITED(st)) << "the child was killed by signal " << WTERMSIG(st);
  EXPECT_EQ(WEXITSTATUS(st), 0) << "the child could not report";
  const size_t nl = text.find('\n');
  if (nl == std::string::npos) return {"none", text};
  return {text.substr(0, nl), text.substr(nl + 1)};
}

TEST(MlockStrategy, LoadsOddTensorsExactly) {
  test::TempDir dir;
  const auto tensors = test::OddTensors();
  for (uint64_t align : {64u, 4096u}) {
    const std::string path = dir.File("odd.wlf");
    const test::WrittenWlf w = test::WriteWlfFile(path, tensors, align, /*seed=*/align);
    std::unique_ptr<Loader> loader;
    std::vector<TensorBytes> views;
    Status s = LoadMlock(path, &loader, &views);
    if (s.code() == Status::Code::kUnsupported && ::geteuid() != 0) GTEST_SKIP() << s.message();
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(views.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto expected = test::TensorData(align, i, w.layout.tensor_sizes[i]);
      ASSERT_EQ(views[i].size(), expected.size()) << "tensor " << i;
      if (expected.empty()) continue;  // memcmp may not be given the null data() of nothing
      EXPECT_EQ(std::memcmp(views[i].data(), expected.data(), expected.size()), 0)
          << "tensor " << i << " differs (align " << align << ")";
    }
    EXPECT_EQ(ChecksumTensors(views), w.checksum);
    // The data area starts on a page and runs to the end of the file.
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t data_pages = (w.layout.file_size - w.layout.data_offset + page - 1) / page;
    EXPECT_EQ(loader->Details()["locked_bytes"], data_pages * page);
  }
}

TEST(MlockStrategy, DataAreaIsResidentAndLockedUntilTheLoaderGoes) {
  test::TempDir dir;
  const std::string path = dir.File("four.wlf");
  const test::WrittenWlf w =
      test::WriteWlfFile(path, {{"a", WlfDType::kU8, {1 << 20}}, {"b", WlfDType::kF32, {1 << 18}}});
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t data_bytes = (w.layout.file_size - w.layout.data_offset + page - 1) / page * page;
  ASSERT_GE(data_bytes, uint64_t{2} << 20);

  const uint64_t locked_before_kib = ProcField("/proc/self/status", "VmLck");
  std::unique_ptr<Loader> loader;
  std::vector<TensorBytes> views;
  Status s = LoadMlock(path, &loader, &views);
  if (s.code() == Status::Code::kUnsupported && ::geteuid() != 0) GTEST_SKIP() << s.message();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(loader->Details()["locked_bytes"], data_bytes);
  // Load alone, before any consumer read, made every page of the data area resident and locked.
  EXPECT_EQ(ProcField("/proc/self/status", "VmLck") - locked_before_kib, data_bytes / 1024);
  const auto* data_start = views[0].data();  // tensor 0 starts the data area, on a page
  ASSERT_EQ(reinterpret_cast<uintptr_t>(data_start) % page, 0u);
  std::vector<unsigned char> resident(data_bytes / page);
  ASSERT_EQ(::mincore(const_cast<std::byte*>(data_start), data_bytes, resident.data()), 0);
  for (size_t i = 0; i < resident.size(); ++i) EXPECT_TRUE(resident[i] & 1) << "page " << i;

  EXPECT_EQ(ChecksumTensors(views), w.checksum);
  loader.reset();
  EXPECT_EQ(ProcField("/proc/self/status", "VmLck"), locked_before_kib) << "unmapping unlocks";
}

TEST(MlockStrategy, RefusesAFileThatChangedSizeSinceValidation) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(table.file_size / 2)), 0);
  std::vector<TensorBytes> views;
  Status s = MakeMlock()->Load(path, table, &views);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("changed size"), std::string::npos) << s.message();
}

// A process held to a limit below the data area gets kUnsupported saying so, not a crash and
// not a bare errno.
TEST(MlockStrategy, ALimitBelowTheDataAreaIsUnsupportedWithTheReason) {
  test::TempDir dir;
  const std::string path = dir.File("big.wlf");
  test::WriteWlfFile(path, {{"a", WlfDType::kU8, {1 << 20}}});
  const ChildResult r = RunLimited(dir, k64KiB, k64KiB, [&] {
    std::unique_ptr<Loader> loader;
    std::vector<TensorBytes> views;
    return LoadMlock(path, &loader, &views);
  });
  if (r.code == "skip") GTEST_SKIP() << r.message;
  EXPECT_EQ(r.code, "unsupported") << r.message;
  EXPECT_NE(r.message.find("RLIMIT_MEMLOCK is 64.00 KiB (hard limit)"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find(path), std::string::npos) << r.message;
}

// A soft limit below the need is raised to the hard limit, and then the lock succeeds.
TEST(MlockStrategy, RaisesALowSoftLimitToTheHardLimit) {
  test::TempDir dir;
  const std::string path = dir.File("big.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, {{"a", WlfDType::kU8, {1 << 20}}});
  const ChildResult r = RunLimited(dir, k64KiB, rlim_t{8} << 20, [&] {
    std::unique_ptr<Loader> loader;
    std::vector<TensorBytes> views;
    LB_RETURN_IF_ERROR(LoadMlock(path, &loader, &views));
    if (ChecksumTensors(views) != w.checksum) return Status::Failed("checksum mismatch");
    rlimit lim{};
    ::getrlimit(RLIMIT_MEMLOCK, &lim);
    if (lim.rlim_cur < (1 << 20)) return Status::Failed("the soft limit was not raised");
    return Status::Ok();
  });
  if (r.code == "skip") GTEST_SKIP() << r.message;
  EXPECT_EQ(r.code, "ok") << r.message;
}

// A data area larger than the machine's memory is refused before mlock is tried. The child is
// held to a 64 KiB limit, so that were the check missing, the kernel would refuse the lock
// (unsupported) instead of filling memory.
TEST(MlockStrategy, MoreThanMemAvailableFailsWithoutTrying) {
  const uint64_t total_bytes = ProcField("/proc/meminfo", "MemTotal") * 1024;
  ASSERT_GT(total_bytes, 0u);
  test::TempDir dir;
  const std::string path = WriteSparseWlf(dir, 2 * total_bytes);
  const ChildResult r = RunLimited(dir, k64KiB, k64KiB, [&] {
    std::unique_ptr<Loader> loader;
    std::vector<TensorBytes> views;
    return LoadMlock(path, &loader, &views);
  });
  if (r.code == "skip") GTEST_SKIP() << r.message;
  EXPECT_EQ(r.code, "I/O error") << r.message;
  EXPECT_NE(r.message.find("MemAvailable"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(path), std::string::npos) << r.message;
}

}  // namespace
}  // namespace loadbench
