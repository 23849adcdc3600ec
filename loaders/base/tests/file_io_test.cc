// OpenReadOnly, the one way a model's file or shard is opened: what is not a regular file (a
// FIFO, a socket, a device, a directory) is refused with one line naming it and what it is,
// and never blocks the open; a regular file comes back blocking, as every read expects.
#include "loaders/base/file_io.h"

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/format_builders.h"
#include "tests/support/special_files.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using std::chrono::milliseconds;

// OpenReadOnly(path) is refused as bad input with one line "path: ...reason...".
::testing::AssertionResult Refused(const std::string& path, const std::string& reason,
                                   int extra_flags = 0) {
  UniqueFd fd;
  const Status s = OpenReadOnly(path, extra_flags, &fd);
  if (s.ok()) return ::testing::AssertionFailure() << path << ": opened";
  if (s.code() != Status::Code::kBadInput) {
    return ::testing::AssertionFailure() << "refused as " << s.code_name() << ": " << s.message();
  }
  if (!s.message().starts_with(path + ": ") || s.message().find(reason) == std::string::npos ||
      s.message().find('\n') != std::string::npos) {
    return ::testing::AssertionFailure()
           << "expected one line '" << path << ": ..." << reason << "...', got: " << s.message();
  }
  if (fd.valid()) return ::testing::AssertionFailure() << "refused, but left an fd open";
  return ::testing::AssertionSuccess() << s.message();
}

TEST(OpenReadOnly, AFifoIsRefusedWithoutBlocking) {
  test::TempDir dir;
  const std::string fifo = dir.File("model.wlf");
  test::MakeFifo(fifo);
  const std::string link = dir.File("link.wlf");
  std::filesystem::create_symlink("model.wlf", link);
  for (const std::string& path : {fifo, link}) {
    SCOPED_TRACE(path);
    for (const int flags : {0, static_cast<int>(O_DIRECT)}) {
      ::testing::AssertionResult r = ::testing::AssertionFailure();
      EXPECT_TRUE(test::ReturnsWithin(test::kBlockedOnFifo, fifo, [&] {
        r = Refused(path, "a FIFO (named pipe), not a regular file", flags);
      })) << "OpenReadOnly blocked on a FIFO";
      EXPECT_TRUE(r);
    }
  }
}

TEST(OpenReadOnly, ASocketADeviceAndADirectoryAreRefused) {
  test::TempDir dir;
  const std::string sock = dir.File("model.safetensors");
  test::MakeSocketFile(sock);
  EXPECT_TRUE(Refused(sock, "a socket, not a regular file"));
  EXPECT_TRUE(Refused("/dev/null", "a character device, not a regular file"));
  EXPECT_TRUE(Refused("/dev/null", "a character device, not a regular file", O_DIRECT));
  EXPECT_TRUE(Refused(dir.path(), "is a directory"));
  EXPECT_TRUE(Refused(dir.File("missing.wlf"), "No such file"));
}

TEST(OpenReadOnly, ARegularFileComesBackBlocking) {
  test::TempDir dir;
  const std::string path = dir.File("model.wlf");
  test::WriteFileBytes(path, test::TextBytes("0123456789"));
  UniqueFd fd;
  const Status s = OpenReadOnly(path, 0, &fd);
  ASSERT_TRUE(s.ok()) << s.message();
  const int flags = ::fcntl(fd.get(), F_GETFL);
  ASSERT_GE(flags, 0);
  EXPECT_EQ(flags & O_NONBLOCK, 0) << "O_NONBLOCK left set";
  EXPECT_NE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, 0) << "not close-on-exec";
  char buf[4];
  EXPECT_TRUE(PreadExact(fd.get(), path, buf, sizeof buf, 6).ok());
  EXPECT_EQ(std::string(buf, sizeof buf), "6789");
}

}  // namespace
}  // namespace loadbench
