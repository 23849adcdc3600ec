#include "harness/machine/env.h"
#include "harness/record/results.h"
#include "loadbench_commit.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

TEST(EnvTest, TopLevelKeysPresent) {
  Json env = CollectEnv("/proc/self/exe");
  for (const char* k :
       {"loadbench", "compiler", "build", "time_utc", "host", "kernel", "virtualization",
        "file_path", "storage", "filesystem", "thp", "memory", "page_cache", "root", "cgroup"}) {
    EXPECT_TRUE(env.contains(k)) << k;
  }
  EXPECT_EQ(env["loadbench"]["version"], LOADBENCH_VERSION);
  EXPECT_EQ(env["loadbench"]["commit"], LOADBENCH_COMMIT);
  EXPECT_TRUE(env["compiler"].is_string());
  EXPECT_EQ(env["root"].get<bool>(), ::geteuid() == 0);
}

TEST(EnvTest, HostAndKernel) {
  Json env = CollectEnv("");
  const Json& host = env["host"];
  ASSERT_TRUE(host["memory_bytes"].is_number_integer());
  EXPECT_GT(host["memory_bytes"].get<int64_t>(), 0);
  ASSERT_TRUE(host["cores"].is_number_integer());
  EXPECT_GE(host["cores"].get<int64_t>(), 1);
  EXPECT_EQ(host["page_size"].get<int64_t>(), ::sysconf(_SC_PAGESIZE));
  EXPECT_TRUE(env["kernel"]["release"].is_string());
  EXPECT_TRUE(env["kernel"]["machine"].is_string());
  ASSERT_TRUE(env["time_utc"].is_string());
  std::string t = env["time_utc"];
  EXPECT_EQ(t.size(), 20u) << t;  // 2024-01-02T03:04:05Z
  EXPECT_EQ(t.back(), 'Z');
  std::string m = env["page_cache"]["residency_method"];
  EXPECT_TRUE(m == "cachestat" || m == "mincore") << m;
}

// The balloon's free page reporting as the kernel shows it: true or false where a virtio
// balloon device exists, null where none does.
TEST(EnvTest, FreePageReportingMatchesTheBalloonsFeatureBits) {
  const Json v = CollectEnv("")["virtualization"];
  std::optional<bool> expected;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/sys/bus/virtio/devices", ec)) {
    std::ifstream device(d.path() / "device"), features(d.path() / "features");
    std::string id, bits;
    if (device >> id && id == "0x0005" && features >> bits) expected = bits.at(5) == '1';
  }
  if (expected) {
    EXPECT_EQ(v["free_page_reporting"], *expected);
  } else {
    EXPECT_TRUE(v["free_page_reporting"].is_null());
  }
  EXPECT_TRUE(v.contains("page_reporting_order"));
}

TEST(EnvTest, MissingPathGivesNullStorage) {
  Json env;
  ASSERT_NO_THROW(env = CollectEnv("/nonexistent/loadbench/weights.bin"));
  ASSERT_TRUE(env["storage"].is_object());
  for (const auto& [k, v] : env["storage"].items()) EXPECT_TRUE(v.is_null()) << k;
  ASSERT_TRUE(env["filesystem"].is_object());
  for (const auto& [k, v] : env["filesystem"].items()) EXPECT_TRUE(v.is_null()) << k;
  EXPECT_TRUE(env["storage"].contains("device"));
  EXPECT_TRUE(env["filesystem"].contains("type"));
  EXPECT_NO_THROW((void)env.dump());
}

TEST(EnvTest, FileOnDiskHasFilesystem) {
  // The test binary itself lives on the build disk.
  Json env = CollectEnv("/proc/self/exe");
  const Json& fsj = env["filesystem"];
  EXPECT_TRUE(fsj["type"].is_string()) << fsj.dump();
  EXPECT_TRUE(fsj["total_bytes"].is_number_unsigned()) << fsj.dump();
  // A block device shows up where the file's st_dev names one in /sys/dev/block.
  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/exe", &st), 0);
  std::string sys =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  if (::access(sys.c_str(), F_OK) == 0) {
    const Json& s = env["storage"];
    EXPECT_TRUE(s["device"].is_string()) << s.dump();
    EXPECT_TRUE(s["rotational"].is_boolean()) << s.dump();
    EXPECT_TRUE(s["size_bytes"].is_number_integer()) << s.dump();
    EXPECT_GT(s["size_bytes"].get<int64_t>(), 0);
  }
}

TEST(EnvTest, Dumps) {
  Json env = CollectEnv("/proc/self/exe");
  std::string text;
  ASSERT_NO_THROW(text = env.dump(2));
  EXPECT_EQ(Json::parse(text), env);
  // A file name that is not UTF-8 still makes a valid env.json.
  Json odd = CollectEnv(std::string("/nonexistent/\xff\xfe.bin"));
  char dir[] = "/tmp/loadbench_env_test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/env.json";
  Status s = WriteJsonFile(path, odd);
  EXPECT_TRUE(s.ok()) << s.message();
  std::ifstream in(path);
  Json back;
  EXPECT_NO_THROW(back = Json::parse(in));
  EXPECT_EQ(back["file_path"], "/nonexistent/\xEF\xBF\xBD\xEF\xBF\xBD.bin");  // two U+FFFD
  std::filesystem::remove_all(dir);
}

// ---- limits ----

std::optional<int64_t> SysctlInt(const char* path) {
  std::ifstream in(path);
  int64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

Json RlimitJson(rlim_t v) { return v == RLIM_INFINITY ? Json("unlimited") : Json(v); }

TEST(EnvTest, LimitsMatchTheSystem) {
  Json env = CollectEnv("");
  ASSERT_TRUE(env.contains("limits"));
  const Json& l = env["limits"];
  EXPECT_EQ(l["drop_caches_writable"], ::access("/proc/sys/vm/drop_caches", W_OK) == 0);
  struct rlimit rl {};
  ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &rl), 0);
  EXPECT_EQ(l["memlock_soft_bytes"], RlimitJson(rl.rlim_cur));
  EXPECT_EQ(l["memlock_hard_bytes"], RlimitJson(rl.rlim_max));
  const auto io_uring = SysctlInt("/proc/sys/kernel/io_uring_disabled");
  EXPECT_EQ(l["io_uring_disabled"], io_uring ? Json(*io_uring) : Json());
  const auto paranoid = SysctlInt("/proc/sys/kernel/perf_event_paranoid");
  EXPECT_EQ(l["perf_event_paranoid"], paranoid ? Json(*paranoid) : Json());
}

TEST(EnvTest, MemlockUnlimitedIsAWord) {
  if (::geteuid() != 0) GTEST_SKIP() << "raising RLIMIT_MEMLOCK to unlimited needs root";
  // In a child, so that this process keeps its limits.
  constexpr int kRefused = 77;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const struct rlimit unlimited { RLIM_INFINITY, RLIM_INFINITY };
    if (::setrlimit(RLIMIT_MEMLOCK, &unlimited) != 0) ::_exit(kRefused);
    const Json l = CollectEnv("")["limits"];
    const bool words =
        l["memlock_soft_bytes"] == "unlimited" && l["memlock_hard_bytes"] == "unlimited";
    ::_exit(words ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kRefused) {
    GTEST_SKIP() << "setrlimit(RLIMIT_MEMLOCK, unlimited) refused (no CAP_SYS_RESOURCE here)";
  }
  EXPECT_EQ(WEXITSTATUS(status), 0) << "not recorded as \"unlimited\"";
}

}  // namespace
}  // namespace loadbench
