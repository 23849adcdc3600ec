// The read recipes of the device's limit: each one reads every byte of every file once, and
// the right bytes (files whose sizes fall on no block boundary, one smaller than a block and
// than O_DIRECT's alignment, more jobs than blocks); a cold read of them records its recipe and
// its cold checks; the device limit is the fastest recipe's figure.
#include "harness/probe/read_recipes.h"

#include <fcntl.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;

// Why O_DIRECT cannot be used on `path` (tmpfs refuses it); empty when it can.
std::string NoDirectReason(const std::string& path) {
  UniqueFd fd;
  const Status s = OpenReadOnly(path, O_DIRECT, &fd);
  return s.ok() ? "" : s.message();
}

class ReadRecipesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/loadbench_recipes_test.XXXXXX";  // not /tmp: tmpfs cannot be cold
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // Sizes on no block boundary: 9 MiB and a few bytes (4 MiB blocks: two whole, one short),
    // 1 MiB less 3 bytes, and 5 bytes (less than one O_DIRECT alignment unit).
    const uint64_t sizes[] = {9 * kRecipeMiB + 4097, kRecipeMiB - 3, 5};
    for (size_t i = 0; i < std::size(sizes); ++i) {
      paths_.push_back(File("f" + std::to_string(i)));
      contents_.push_back(test::WriteRandom(paths_.back(), sizes[i], i + 1));
    }
  }

  // Reads `paths` by `recipe` and checks that every byte of each arrived exactly once, with
  // the file's value there.
  void ExpectEveryByteOnce(const ReadRecipe& recipe, const std::vector<size_t>& files) {
    SCOPED_TRACE(recipe.name);
    std::vector<std::string> paths;
    std::vector<std::vector<std::byte>> got;
    std::vector<std::vector<int>> seen;
    uint64_t want = 0;
    for (size_t f : files) {
      paths.push_back(paths_[f]);
      got.emplace_back(contents_[f].size());
      seen.emplace_back(contents_[f].size());
      want += contents_[f].size();
    }
    std::mutex mu;
    uint64_t bytes = 0;
    double seconds = 0;
    const Status s =
        ReadWithRecipe(recipe, paths, &bytes, &seconds,
                       [&](size_t file, uint64_t offset, const std::byte* data, size_t len) {
                         std::lock_guard lock(mu);
                         ASSERT_LE(offset + len, got.at(file).size());
                         std::copy(data, data + len,
                                   got[file].begin() + static_cast<ptrdiff_t>(offset));
                         for (size_t i = 0; i < len; ++i) ++seen[file][offset + i];
                       });
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(bytes, want);
    EXPECT_GT(seconds, 0);
    for (size_t k = 0; k < files.size(); ++k) {
      EXPECT_TRUE(got[k] == contents_[files[k]]) << "file " << files[k] << " read wrong";
      EXPECT_TRUE(std::all_of(seen[k].begin(), seen[k].end(), [](int n) { return n == 1; }))
          << "file " << files[k] << ": a byte read other than once";
    }
  }

  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
  std::vector<std::string> paths_;
  std::vector<std::vector<std::byte>> contents_;
};

TEST_F(ReadRecipesTest, EachRecipeReadsEveryByteOfEveryFileOnce) {
  const std::string no_direct = NoDirectReason(paths_[0]);
  std::string skipped;
  for (const ReadRecipe& recipe : kReadRecipes) {
    if (recipe.direct && !no_direct.empty()) {
      skipped += std::string(" ") + recipe.name;
      continue;
    }
    ExpectEveryByteOnce(recipe, {0, 1, 2});  // several files, split among the jobs
    ExpectEveryByteOnce(recipe, {2});        // fewer blocks than jobs
    ExpectEveryByteOnce(recipe, {1, 0});
  }
  if (!skipped.empty()) GTEST_SKIP() << "not tried:" << skipped << ": " << no_direct;
}

TEST_F(ReadRecipesTest, EveryRecipeIsNamedAndItsParamsSayWhatItDoes) {
  for (const ReadRecipe& recipe : kReadRecipes) {
    EXPECT_EQ(FindRecipe(recipe.name), &recipe);
    const Json p = RecipeParams(recipe);
    EXPECT_EQ(p["recipe"], recipe.name);
    EXPECT_EQ(p["direct"], recipe.direct ? "on" : "off");
    EXPECT_EQ(p["block_bytes"], recipe.block_bytes);
    EXPECT_EQ(p["jobs"], recipe.jobs);
    for (const auto& [key, value] : p.items()) EXPECT_TRUE(value.is_primitive()) << key;
  }
  EXPECT_EQ(FindRecipe("no_such_recipe"), nullptr);
}

TEST_F(ReadRecipesTest, AColdReadRecordsItsRecipeAndItsColdChecks) {
  const ReadRecipe& recipe = *FindRecipe("buffered_4m_seq_x4");
  const Json m = ColdRecipeRead(recipe, {paths_[0], paths_[1]}, 2);
  ASSERT_TRUE(m["gb_per_s"].is_number()) << m.dump(2);
  EXPECT_GT(m["gb_per_s"].get<double>(), 0);
  EXPECT_EQ(m["recipe"], recipe.name);
  EXPECT_EQ(m["params"], RecipeParams(recipe));
  EXPECT_EQ(m["bytes"], contents_[0].size() + contents_[1].size());
  ASSERT_EQ(m["cold_checks"].size(), 4u) << m.dump(2);  // two files, two repetitions
  for (const Json& c : m["cold_checks"]) EXPECT_LE(c["resident"].get<double>(), 0.01);
  EXPECT_FALSE(m.contains("unsupported"));
}

TEST_F(ReadRecipesTest, AFileThatCannotBeReadGivesNoFigureButTheReason) {
  const Json m = ColdRecipeRead(kReadRecipes[0], {paths_[0], File("missing")}, 1);
  EXPECT_TRUE(m["gb_per_s"].is_null());
  EXPECT_NE(m["reason"].get<std::string>().find(File("missing")), std::string::npos) << m.dump(2);
}

TEST_F(ReadRecipesTest, TheDeviceLimitIsTheFastestRecipe) {
  const Json d = DeviceLimit({paths_[0], paths_[1]}, 1);
  ASSERT_TRUE(d["gb_per_s"].is_number()) << d.dump(2);
  double best = 0;
  std::string fastest;
  ASSERT_EQ(d["recipes"].size(), std::size(kReadRecipes));
  for (const auto& [name, m] : d["recipes"].items()) {
    if (m["gb_per_s"].is_number() && m["gb_per_s"].get<double>() > best) {
      best = m["gb_per_s"].get<double>();
      fastest = name;
    }
  }
  EXPECT_EQ(d["gb_per_s"].get<double>(), best);
  EXPECT_EQ(d["recipe"], fastest);
  EXPECT_EQ(d["params"], RecipeParams(*FindRecipe(fastest)));
}

}  // namespace
}  // namespace loadbench::probe
