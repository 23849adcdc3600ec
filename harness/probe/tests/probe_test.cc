// `loadbench probe` and ProbeForRun: the probe records every ceiling (a positive figure or null
// with a reason), leaves no scratch file, refuses bad input with exit 2 and writes nothing then,
// cleans up on SIGINT; ProbeForRun takes the cache only from this boot and otherwise makes a
// quick probe that says why. Every test points XDG_CACHE_HOME at a temporary directory, so the
// user's cache is never read or written.
#include "harness/probe/probe.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/probe/read_recipes.h"
#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv final {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

using test::Describe;
using test::ProcessResult;
using test::RunLoadbench;

// Exit 2 and one line on stderr holding every one of `needles`.
void ExpectBadInput(const ProcessResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  ASSERT_FALSE(r.err.empty()) << Describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << Describe(r);
  for (const auto& n : needles) {
    EXPECT_NE(r.err.find(n), std::string::npos) << "no '" << n << "'\n" << Describe(r);
  }
}

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return Json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::string DeviceOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

bool EmptyDir(const std::string& dir) { return fs::is_empty(dir); }

// Every ceiling is present, and its figure is a positive number or null beside a reason.
void ExpectEveryCeiling(const Json& probe) {
  ASSERT_TRUE(probe.contains("ceilings")) << probe.dump(2);
  const Json& c = probe["ceilings"];
  for (const CeilingSpec& spec : kCeilings) {
    SCOPED_TRACE(spec.key);
    ASSERT_TRUE(c.contains(spec.key)) << c.dump(2);
    const Json& m = c[spec.key];
    ASSERT_TRUE(m.is_object()) << m.dump();
    ASSERT_TRUE(m.contains(spec.figure)) << m.dump(2);
    const Json& f = m[spec.figure];
    if (f.is_null()) {
      ASSERT_TRUE(m.contains("reason")) << m.dump(2);
      EXPECT_TRUE(m["reason"].is_string() && !m["reason"].get<std::string>().empty()) << m.dump(2);
    } else {
      ASSERT_TRUE(f.is_number()) << m.dump(2);
      EXPECT_GT(f.get<double>(), 0) << m.dump(2);
    }
  }
}

// The first touches and the fill, as every probe has them (full or quick): 7 repetitions of a
// fault cost, its median within its spread; a positive fill rate, the median within its spread.
void ExpectMedianAndSpread(const Json& probe) {
  const Json& anon = probe["ceilings"]["anon_4k_fault"];
  ASSERT_TRUE(anon["median_us"].is_number()) << anon.dump(2);
  EXPECT_EQ(anon["median_us"], anon["us_per_fault"]);
  EXPECT_EQ(anon["reps"], 7);
  ASSERT_EQ(anon["spread_us"].size(), 2u) << anon.dump(2);
  EXPECT_LE(anon["spread_us"][0].get<double>(), anon["median_us"].get<double>());
  EXPECT_GE(anon["spread_us"][1].get<double>(), anon["median_us"].get<double>());
  const Json& thp = probe["ceilings"]["thp_fault"];
  EXPECT_EQ(thp["reps"], 7);
  if (thp["median_us"].is_number()) {
    EXPECT_EQ(thp["reps_in_median"].get<int>() + thp["reps_left_out"].get<int>(), 7) << thp;
    EXPECT_LE(thp["spread_us"][0].get<double>(), thp["median_us"].get<double>()) << thp;
    EXPECT_GE(thp["spread_us"][1].get<double>(), thp["median_us"].get<double>()) << thp;
  }
  const Json& fill = probe["ceilings"]["memory_fill"];
  ASSERT_TRUE(fill["gb_per_s"].is_number()) << fill.dump(2);
  EXPECT_GT(fill["gb_per_s"].get<double>(), 0);
  EXPECT_LE(fill["spread_gb_per_s"][0].get<double>(), fill["gb_per_s"].get<double>());
  EXPECT_GE(fill["spread_gb_per_s"][1].get<double>(), fill["gb_per_s"].get<double>());
}

class ProbeCliTest : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  ScopedEnv cache_{"XDG_CACHE_HOME", tmp_.File("cache")};
  const std::string data_ = tmp_.File("data");
  const std::string out_ = tmp_.File("out");
};

TEST_F(ProbeCliTest, RecordsEveryCeilingAndLeavesNoScratchFile) {
  const ProcessResult r =
      RunLoadbench({"probe", "--dir", data_, "--size", "4MiB", "--out", out_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("probe [1/"), std::string::npos) << Describe(r);

  const Json env = ReadJson(out_ + "/env.json");
  ASSERT_TRUE(env.is_object());
  ASSERT_TRUE(env.contains("probe"));
  const Json& probe = env["probe"];
  EXPECT_EQ(probe["kind"], "full");
  // What any Linux machine can measure (no root, no GPU, no THP, no O_DIRECT needed) is a
  // figure, never null.
  for (const char* key : {"sequential_write", "warm_read", "memcpy", "memory_fill", "anon_4k_fault",
                          "file_minor_fault"}) {
    const Json& m = probe["ceilings"][key];
    const char* figure =
        std::string(key).find("fault") != std::string::npos ? "us_per_fault" : "gb_per_s";
    ASSERT_TRUE(m[figure].is_number()) << key << ": " << m.dump();
    EXPECT_GT(m[figure].get<double>(), 0) << key << ": " << m.dump();
  }
  EXPECT_EQ(probe["scratch"]["bytes"], 4u << 20);
  EXPECT_EQ(probe["boot_id"], BootId());
  ExpectEveryCeiling(probe);
  ExpectMedianAndSpread(probe);
  // The device limit: every read recipe's record, and the fastest named with its params.
  const Json& limit = probe["ceilings"]["device_limit"];
  ASSERT_EQ(limit["recipes"].size(), std::size(probe::kReadRecipes)) << limit.dump(2);
  if (limit["gb_per_s"].is_number()) {
    const probe::ReadRecipe* fastest = probe::FindRecipe(limit["recipe"].get<std::string>());
    ASSERT_NE(fastest, nullptr) << limit.dump(2);
    EXPECT_EQ(limit["params"], probe::RecipeParams(*fastest));
    EXPECT_EQ(limit["gb_per_s"], limit["recipes"][fastest->name]["gb_per_s"]);
  }
  EXPECT_TRUE(env.contains("limits"));
  EXPECT_TRUE(probe["facts"].contains("drop_caches_writable"));
  // The state the probe ran in, as env.json's system says it.
  EXPECT_EQ(probe["facts"]["tuned"], env["system"]["tuned"]);
  EXPECT_EQ(probe["facts"]["page_reporting"], env["system"]["page_reporting"]);
  EXPECT_NE(env["command_line"].get<std::string>().find("--size 4MiB"), std::string::npos);

  // --json prints the probe object; the cache holds it too.
  EXPECT_EQ(Json::parse(r.out, nullptr, false), probe) << Describe(r);
  EXPECT_EQ(ReadJson(tmp_.File("cache/loadbench/probe.json")), probe);

  // The directory was created for the scratch file, and nothing is left in it.
  ASSERT_TRUE(fs::is_directory(data_));
  EXPECT_TRUE(EmptyDir(data_));
}

TEST_F(ProbeCliTest, Help) {
  const ProcessResult r = RunLoadbench({"probe", "--help"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  for (const char* o : {"--dir", "--size", "--out", "--json"}) {
    EXPECT_NE(r.out.find(o), std::string::npos) << o << "\n" << Describe(r);
  }
  EXPECT_NE(RunLoadbench({"--help"}).out.find("probe"), std::string::npos);
}

TEST_F(ProbeCliTest, DirectoryThatCannotBeCreated) {
  const std::string file = tmp_.File("plain-file");
  test::WriteFileBytes(file, {std::byte{1}});
  const std::string dir = file + "/sub";
  ExpectBadInput(RunLoadbench({"probe", "--dir", dir, "--size", "4MiB", "--out", out_}),
                 {dir, "Not a directory"});
  EXPECT_FALSE(fs::exists(out_));
  EXPECT_FALSE(fs::exists(tmp_.File("cache")));
}

TEST_F(ProbeCliTest, DirectoryNotWritable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into a mode 0500 directory anyway";
  fs::create_directory(data_);
  fs::permissions(data_, fs::perms::owner_read | fs::perms::owner_exec);
  ExpectBadInput(RunLoadbench({"probe", "--dir", data_, "--size", "4MiB", "--out", out_}),
                 {data_, "Permission denied"});
  fs::permissions(data_, fs::perms::owner_all);
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(ProbeCliTest, NotEnoughFreeSpace) {
  ExpectBadInput(RunLoadbench({"probe", "--dir", data_, "--size", "1000000TiB", "--out", out_}),
                 {data_, "not enough free space", "free"});
  EXPECT_TRUE(EmptyDir(data_));
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(ProbeCliTest, BadSize) {
  ExpectBadInput(RunLoadbench({"probe", "--dir", data_, "--size", "lots", "--out", out_}),
                 {"--size", "lots"});
  ExpectBadInput(RunLoadbench({"probe", "--dir", data_, "--size", "4KiB", "--out", out_}),
                 {"--size", "at least 1 MiB"});
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(ProbeCliTest, OutThatHoldsEnvJson) {
  fs::create_directory(out_);
  test::WriteFileBytes(out_ + "/env.json", {std::byte{'{'}, std::byte{'}'}});
  ExpectBadInput(RunLoadbench({"probe", "--dir", data_, "--size", "4MiB", "--out", out_}),
                 {out_ + "/env.json", "already exists"});
  EXPECT_EQ(test::ReadFileBytes(out_ + "/env.json").size(), 2u);  // untouched
  EXPECT_TRUE(EmptyDir(data_));
}

// SIGINT once the first measurement has started: the rest of the probe (memcpy and fault
// measurements over hundreds of MiB) is still ahead, so the signal lands mid-probe.
TEST_F(ProbeCliTest, InterruptLeavesNothing) {
  bool sent = false;
  const ProcessResult r = RunLoadbench({"probe", "--dir", data_, "--size", "4MiB", "--out", out_},
                                       [&](const std::string& err, pid_t pid) {
                                         if (!sent && err.find("probe [1/") != std::string::npos) {
                                           sent = ::kill(pid, SIGINT) == 0;
                                         }
                                       });
  ASSERT_TRUE(sent) << Describe(r);
  EXPECT_EQ(r.exit_code, 130) << Describe(r);
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << Describe(r);
  EXPECT_TRUE(EmptyDir(data_));
  EXPECT_FALSE(fs::exists(out_));
  EXPECT_FALSE(fs::exists(tmp_.File("cache/loadbench/probe.json")));
}

class ProbeForRunTest : public ::testing::Test {
 protected:
  void WriteCache(const std::string& text) {
    fs::create_directories(tmp_.File("cache/loadbench"));
    std::ofstream(cache_path_) << text;
  }
  // A cached probe as `loadbench probe` writes it, of this boot unless told otherwise, made
  // `age_s` seconds ago on the device of `tmp_`.
  Json CachedProbe(const std::string& boot_id, int64_t age_s) {
    Json ceilings = Json::object();
    for (const CeilingSpec& spec : kCeilings) ceilings[spec.key] = {{spec.figure, 1.5}};
    return {{"kind", "full"},
            {"time_utc", "2024-01-02T03:04:05Z"},
            {"time_unix", static_cast<int64_t>(std::time(nullptr)) - age_s},
            {"boot_id", boot_id},
            {"wall_s", 12.5},
            {"scratch", {{"dir", tmp_.path()}, {"device", DeviceOf(tmp_.path())}, {"bytes", 1}}},
            {"ceilings", ceilings},
            {"facts", {{"kernel", "test"}}}};
  }
  // A quick probe, made here or by an earlier call of this boot (from probe-quick.json).
  void ExpectQuick(const Json& p, const std::string& why) {
    EXPECT_TRUE(p["source"] == "quick" || p["source"] == quick_path_) << p.dump(2);
    EXPECT_EQ(p["kind"], "quick");
    ASSERT_TRUE(p["note"].is_string()) << p.dump(2);
    const std::string note = p["note"];
    EXPECT_NE(note.find(why), std::string::npos) << note;
    EXPECT_NE(note.find("loadbench probe"), std::string::npos) << note;
    ExpectEveryCeiling(p);
    ExpectMedianAndSpread(p);
    for (const char* device :
         {"sequential_write", "cold_direct_read", "cold_buffered_read", "device_limit"}) {
      EXPECT_TRUE(p["ceilings"][device]["gb_per_s"].is_null()) << device;
    }
    EXPECT_TRUE(p["facts"].is_object());
    // The quick probe's file-fault scratch file is unnamed: nothing is left beside the weights.
    EXPECT_TRUE(EmptyDir(weights_dir_));
  }

  test::TempDir tmp_;
  ScopedEnv cache_{"XDG_CACHE_HOME", tmp_.File("cache")};
  const std::string cache_path_ = tmp_.File("cache/loadbench/probe.json");
  const std::string quick_path_ = tmp_.File("cache/loadbench/probe-quick.json");
  const std::string weights_dir_ = [this] {
    fs::create_directory(tmp_.File("weights"));
    return tmp_.File("weights");
  }();
  const std::string weights_ = weights_dir_ + "/model.wlf";  // never created: only its dir is used
};

TEST_F(ProbeForRunTest, CachePathFollowsXdg) {
  EXPECT_EQ(ProbeCachePath(), cache_path_);
  ScopedEnv relative("XDG_CACHE_HOME", "relative/dir");  // invalid by the XDG spec: ignored
  ScopedEnv home("HOME", tmp_.File("home"));
  EXPECT_EQ(ProbeCachePath(), tmp_.File("home/.cache/loadbench/probe.json"));
}

TEST_F(ProbeForRunTest, UsesTheCacheOfThisBoot) {
  const Json cached = CachedProbe(BootId(), 100);
  WriteCache(cached.dump());
  const Json p = ProbeForRun(tmp_.path());
  EXPECT_EQ(p["source"], cache_path_) << p.dump(2);
  EXPECT_EQ(p["kind"], "full");
  EXPECT_EQ(p["ceilings"], cached["ceilings"]);
  ASSERT_TRUE(p["age_s"].is_number_integer());
  EXPECT_GE(p["age_s"].get<int64_t>(), 100);
  EXPECT_EQ(p["same_device"], true);
  // A file that cannot be stat'ed: unknown, not false.
  EXPECT_TRUE(ProbeForRun(tmp_.File("missing/file"))["same_device"].is_null());
}

TEST_F(ProbeForRunTest, CacheOfAnotherDevice) {
  Json cached = CachedProbe(BootId(), 0);
  cached["scratch"]["device"] = "0:0";
  WriteCache(cached.dump());
  const Json p = ProbeForRun(tmp_.path());
  EXPECT_EQ(p["source"], cache_path_);
  EXPECT_EQ(p["same_device"], false);
}

TEST_F(ProbeForRunTest, QuickWhenNoCache) {
  ExpectQuick(ProbeForRun(weights_), "no probe of this machine cached at " + cache_path_);
  EXPECT_FALSE(fs::exists(cache_path_));  // a quick probe is never taken for a full one
}

// The first run of a boot makes the quick probe; the runs after it take that one, until a full
// probe is cached; one of an earlier boot is made again.
TEST_F(ProbeForRunTest, AQuickProbeIsMadeOncePerBoot) {
  EXPECT_EQ(QuickProbeCachePath(), quick_path_);
  const Json first = ProbeForRun(weights_);
  EXPECT_EQ(first["source"], "quick");
  ASSERT_TRUE(fs::exists(quick_path_));
  const Json again = ProbeForRun(weights_dir_);  // a path that exists: same_device is known
  ExpectQuick(again, "no probe of this machine cached at " + cache_path_);
  EXPECT_EQ(again["source"], quick_path_);
  EXPECT_EQ(again["ceilings"]["memcpy"], first["ceilings"]["memcpy"]);
  EXPECT_EQ(again["time_unix"], first["time_unix"]);
  EXPECT_GE(again["age_s"].get<int64_t>(), 0);
  EXPECT_EQ(again["same_device"], true);
  EXPECT_NE(again["note"].get<std::string>().find("an earlier command's"), std::string::npos);

  Json old = first;
  old["boot_id"] = "00000000-0000-0000-0000-000000000000";
  std::ofstream(quick_path_) << old.dump();
  EXPECT_EQ(ProbeForRun(weights_)["source"], "quick");

  WriteCache(CachedProbe(BootId(), 0).dump());
  EXPECT_EQ(ProbeForRun(weights_)["source"], cache_path_);
}

TEST_F(ProbeForRunTest, QuickWhenCacheIsCorrupt) {
  WriteCache("{\"boot_id\": ");
  ExpectQuick(ProbeForRun(weights_), "corrupt");
  WriteCache("[1, 2]");
  ExpectQuick(ProbeForRun(weights_), "corrupt");
  Json no_ceilings = CachedProbe(BootId(), 0);
  no_ceilings.erase("ceilings");
  WriteCache(no_ceilings.dump());
  ExpectQuick(ProbeForRun(weights_), "corrupt");
}

TEST_F(ProbeForRunTest, QuickWhenCacheIsFromAnotherBoot) {
  WriteCache(CachedProbe("00000000-0000-0000-0000-000000000000", 0).dump());
  ExpectQuick(ProbeForRun(weights_), "earlier boot");
}

}  // namespace
}  // namespace loadbench
