// For the storage tests: a small model (a shard of incompressible bytes and a JSON file) in a
// folder of its own, the journal kept in a lock folder of the test's own, and the checks that a
// removed storage left nothing: no mount, no loop device bound to its file, no folder, no
// cgroup, no journal line.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/process/journal.h"
#include "harness/storage/devices.h"
#include "harness/storage/parts.h"
#include "harness/storage/storage.h"
#include "tests/support/saved_env.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench::test {

inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Drops `path`'s pages, so that its next read goes to the device.
inline void DropPages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

inline bool PathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "making a storage needs root";
    char tmpl[] = "/tmp/lb-storage-test-locks-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    locks_ = tmpl;
    ::setenv("LOADBENCH_LOCK_DIR", locks_.c_str(), 1);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!locks_.empty()) std::filesystem::remove_all(locks_, ignored);
  }

  // The model: `shard_bytes` of incompressible bytes and a small JSON file, both in dir_.
  std::vector<std::string> WriteModel(uint64_t shard_bytes) {
    std::string shard(shard_bytes, '\0');
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i + 8 <= shard.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(&shard[i], &x, 8);
    }
    const std::vector<std::string> files = {dir_.File("model.safetensors"),
                                            dir_.File("config.json")};
    std::ofstream(files[0], std::ios::binary) << shard;
    std::ofstream(files[1]) << R"({"architectures": ["Test"], "hidden_size": 64})";
    return files;
  }

  // What this process's journal lists now.
  static JournalLines Listed() { return JournalOf(::getpid()); }

  // Each thing of `made` (journal lines of a storage) gone: no mount, no loop device bound to
  // its file, no folder, no cgroup.
  static void ExpectGone(const JournalLines& made) {
    for (const auto& [kind, what] : made) {
      if (kind == Leftover::kMount) {
        EXPECT_FALSE(MountedAt(what)) << what;
      } else if (kind == Leftover::kFolder || kind == Leftover::kIoCgroup) {
        EXPECT_FALSE(PathExists(what)) << what;
      } else if (kind == Leftover::kLoop) {
        const std::string device = what.substr(0, what.find('\t'));
        const std::string file = what.substr(what.find('\t') + 1);
        const std::string bound = LoopBackingFile(device);
        EXPECT_TRUE(bound != file && bound != file + " (deleted)") << what;
      }
    }
  }

  test::SavedEnv env_{{"LOADBENCH_LOCK_DIR"}};
  std::string locks_;
  test::TempDir dir_;
};

}  // namespace loadbench::test
