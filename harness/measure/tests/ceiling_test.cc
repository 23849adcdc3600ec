// The ceiling run with the built binary: it reads every byte of the model (every shard) cold,
// and its record says which read recipe gave the figure, with what parameters and chosen how:
// without a probe, the first ceiling measures every recipe and keeps the fastest, whose figures
// it records beside its own, and the later ones repeat that recipe; with a cached probe of the
// file's device, every ceiling repeats the probe's fastest recipe; a probe of another device
// is not used; the same model made again elsewhere (another storage, or the same path anew) has
// its recipe chosen again, and a probe chooses only where every shard is on its device.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/gen/generator.h"
#include "harness/launch/launcher.h"
#include "harness/measure/ceiling.h"
#include "harness/probe/read_recipes.h"
#include "tests/support/machine.h"
#include "tests/support/run_cli.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string DeviceOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
}

class CeilingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::CannotDropCachesReason(); !why.empty()) GTEST_SKIP() << why;
    char tmpl[] = "/var/tmp/loadbench_ceiling_test.XXXXXX";  // not /tmp: tmpfs cannot be cold
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_cache_ = old;
    ::setenv("XDG_CACHE_HOME", (dir_ + "/cache").c_str(), 1);  // never the user's probe
    GenOptions g;
    g.size_bytes = 6u << 20;
    g.shards = 2;
    g.out_path = dir_ + "/model.wlf";
    GenResult r;
    ASSERT_TRUE(Generate(g, &r).ok());
    model_ = r.model_path;
  }
  void TearDown() override {
    if (old_cache_) {
      ::setenv("XDG_CACHE_HOME", old_cache_->c_str(), 1);
    } else {
      ::unsetenv("XDG_CACHE_HOME");
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // The ceiling records of a cold run of fread with `reps` rounds, by round.
  std::vector<Json> Ceilings(const std::string& out, int reps) {
    const test::ProcessResult r = test::RunLoadbench(
        {"run", "--file", model_, "--strategies", "fread", "--cache", "cold", "--reps",
         std::to_string(reps), "--ceiling", "--sample-ms", "0", "--out", dir_ + "/" + out});
    EXPECT_EQ(r.exit_code, 0) << test::Describe(r);
    std::vector<Json> ceilings;
    for (const Json& run : test::ReadRuns(dir_ + "/" + out)) {
      if (run["strategy"] == "ceiling") ceilings.push_back(run);
    }
    std::sort(ceilings.begin(), ceilings.end(),
              [](const Json& a, const Json& b) { return a["rep"] < b["rep"]; });
    EXPECT_EQ(ceilings.size(), static_cast<size_t>(reps));
    return ceilings;
  }

  // A cached probe of this boot whose fastest recipe is `recipe`, made on `device`.
  void WriteProbe(const std::string& recipe, const std::string& device) {
    fs::create_directories(dir_ + "/cache/loadbench");
    const Json probe = {{"kind", "full"},
                        {"time_utc", "2024-01-02T03:04:05Z"},
                        {"time_unix", static_cast<int64_t>(std::time(nullptr))},
                        {"boot_id", BootId()},
                        {"scratch", {{"dir", dir_}, {"device", device}, {"bytes", 1}}},
                        {"ceilings", {{"device_limit", {{"gb_per_s", 1.0}, {"recipe", recipe}}}}},
                        {"facts", Json::object()}};
    std::ofstream(dir_ + "/cache/loadbench/probe.json") << probe.dump();
  }

  // An ok ceiling record that read every byte of the model by `recipe`, chosen `by`.
  static void ExpectRead(const Json& c, const std::string& recipe, const std::string& by) {
    ASSERT_EQ(c["status"], "ok") << c.dump(2);
    EXPECT_EQ(c["ceiling_bytes"], c["file_bytes"]) << "the same bytes the load reads";
    EXPECT_NEAR(c["wall_s"].get<double>() * c["gb_per_s"].get<double>() * 1e9,
                c["ceiling_bytes"].get<double>(), 1.0);
    Json params = probe::RecipeParams(*probe::FindRecipe(recipe));
    params["chosen"] = by;
    EXPECT_EQ(c["params"], params);
  }

  std::string dir_, model_;
  std::optional<std::string> old_cache_;
};

TEST_F(CeilingTest, WithoutAProbeTheFirstCeilingTriesEveryRecipeAndTheNextRepeatsTheFastest) {
  const std::vector<Json> c = Ceilings("out", 2);
  ASSERT_EQ(c.size(), 2u);
  ASSERT_TRUE(c[0]["params"]["recipe"].is_string()) << c[0].dump(2);
  const std::string fastest = c[0]["params"]["recipe"];
  ASSERT_NE(probe::FindRecipe(fastest), nullptr) << fastest;
  ExpectRead(c[0], fastest, "measured");
  ASSERT_TRUE(c[0]["ceiling_recipes"].is_object()) << c[0].dump(2);
  double best = 0;
  for (const probe::ReadRecipe& recipe : probe::kReadRecipes) {
    const Json& f = c[0]["ceiling_recipes"][recipe.name];
    ASSERT_TRUE(f["gb_per_s"].is_number()) << recipe.name << ": " << f.dump();
    best = std::max(best, f["gb_per_s"].get<double>());
  }
  EXPECT_EQ(c[0]["gb_per_s"].get<double>(), best);

  ExpectRead(c[1], fastest, "first_ceiling");
  EXPECT_FALSE(c[1].contains("ceiling_recipes")) << "one recipe measured: no figures beside it";
}

TEST_F(CeilingTest, AProbeOfTheFilesDeviceChoosesTheRecipeAndOneOfAnotherDeviceDoesNot) {
  WriteProbe("buffered_4m_willneed_x4", DeviceOf(dir_));
  const std::vector<Json> c = Ceilings("probed", 2);
  ASSERT_EQ(c.size(), 2u);
  for (const Json& ceiling : c) {
    ExpectRead(ceiling, "buffered_4m_willneed_x4", "probe");
    EXPECT_FALSE(ceiling.contains("ceiling_recipes")) << ceiling.dump(2);
  }

  WriteProbe("buffered_4m_willneed_x4", "0:0");
  const std::vector<Json> other = Ceilings("other", 1);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0]["params"]["chosen"], "measured") << other[0].dump(2);
  EXPECT_EQ(other[0]["ceiling_recipes"].size(), std::size(probe::kReadRecipes));
}

// A file of `bytes` varied bytes at `path`.
void WriteFile(const std::string& path, size_t bytes) {
  std::string data(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  std::ofstream(path, std::ios::binary) << data;
}

// A ceiling read of `paths` as the model `name`, in the command of `ceiling`.
RunRecord ReadCeiling(DiskCeiling& ceiling, const std::string& name,
                      const std::vector<std::string>& paths) {
  LaunchRequest req;
  req.worker.file = name;
  req.file_paths = paths;
  req.cache = "cold";
  RunRecord r;
  ceiling.Read(req, &r);
  return r;
}

TEST_F(CeilingTest, TheSameModelOnAnotherStorageOrMadeAnewHasItsRecipeChosenAgain) {
  const std::string first = dir_ + "/m.bin";
  WriteFile(first, 3u << 20);
  DiskCeiling ceiling;  // one command's ceiling, no probe cached
  RunRecord r = ReadCeiling(ceiling, "model", {first});
  ASSERT_EQ(r.status, "ok") << r.error.value_or("");
  EXPECT_EQ(r.params["chosen"], "measured");
  EXPECT_EQ(r.ceiling_recipes.size(), std::size(probe::kReadRecipes));
  r = ReadCeiling(ceiling, "model", {first});
  EXPECT_EQ(r.params["chosen"], "first_ceiling") << "the same file: the same recipe";

  // The model copied onto another storage: the same name, another file (device, inode).
  fs::create_directories(dir_ + "/other");
  const std::string copy = dir_ + "/other/m.bin";
  fs::copy_file(first, copy);
  r = ReadCeiling(ceiling, "model", {copy});
  ASSERT_EQ(r.status, "ok") << r.error.value_or("");
  EXPECT_EQ(r.params["chosen"], "measured") << "another storage chooses again";
  EXPECT_EQ(r.ceiling_recipes.size(), std::size(probe::kReadRecipes));

  // The storage made again at the same mount point: the same path, a new file.
  fs::remove(first);
  WriteFile(first, 3u << 20);
  r = ReadCeiling(ceiling, "model", {first});
  EXPECT_EQ(r.params["chosen"], "measured") << "the same path made anew chooses again";
  LaunchRequest a, b;
  a.worker.file = b.worker.file = "model";
  a.file_paths = {first};
  b.file_paths = {copy};
  EXPECT_NE(DiskCeiling::FileKey(a), DiskCeiling::FileKey(b));
}

TEST_F(CeilingTest, AProbeChoosesOnlyWhereEveryShardIsOnItsDevice) {
  // /dev/shm is another file system than the test's folder: one shard there is enough for the
  // probe of the folder's device not to choose. (tmpfs cannot be read cold: no recipe gives a
  // figure there, but every one was tried.)
  if (DeviceOf("/dev/shm") == DeviceOf(dir_)) GTEST_SKIP() << "/dev/shm on the test's device";
  WriteProbe("buffered_4m_willneed_x4", DeviceOf(dir_));
  const std::string here = dir_ + "/a.bin";
  WriteFile(here, 1u << 20);
  char tmpl[] = "/dev/shm/loadbench_ceiling_test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string there = std::string(tmpl) + "/b.bin";
  WriteFile(there, 1u << 20);
  DiskCeiling ceiling;
  RunRecord r = ReadCeiling(ceiling, "model", {here});
  EXPECT_EQ(r.params["chosen"], "probe") << r.error.value_or("");
  r = ReadCeiling(ceiling, "sharded", {here, there});
  EXPECT_NE(r.params.value("chosen", ""), "probe") << r.params.dump();
  EXPECT_EQ(r.ceiling_recipes.size(), std::size(probe::kReadRecipes)) << r.error.value_or("");
  std::error_code ec;
  fs::remove_all(tmpl, ec);
}

}  // namespace
}  // namespace loadbench
