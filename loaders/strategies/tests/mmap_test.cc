// The mmap strategy's options, which make llama.cpp's own loader a row of its own
// (mmap:share=shared:fadvise=sequential:populate=on), each on a sharded model (run shard by
// shard), checked by checksum; a shared mapping refuses writable views; populated views are
// resident.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/shard_by_shard.h"
#include "loaders/use/spec.h"
#include "tests/support/sharded_model.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using Options = std::map<std::string, std::string>;

std::unique_ptr<Loader> MakeMmap(const Options& options, const TensorTable& table) {
  const StrategyInfo* info = FindStrategy("mmap");
  Params params;
  const Status s = Params::Resolve("mmap", info->options, options, &params);
  EXPECT_TRUE(s.ok()) << s.message();
  return MakeModelLoader(*info, params, table);
}

// Pages of `views` that mincore reports resident, and all of their pages.
void CountResident(const std::vector<TensorBytes>& views, uint64_t* resident, uint64_t* pages) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  *resident = *pages = 0;
  for (const TensorBytes& v : views) {
    if (v.empty()) continue;
    const auto at = reinterpret_cast<uintptr_t>(v.data());
    const uintptr_t start = at / page * page;
    const size_t len = at + v.size() - start;
    std::vector<unsigned char> in((len + page - 1) / page);
    ASSERT_EQ(::mincore(reinterpret_cast<void*>(start), len, in.data()), 0);
    for (unsigned char c : in) *resident += c & 1;
    *pages += in.size();
  }
}

TEST(MmapStrategyOptions, AreDeclaredWithTodaysBehaviourAsTheDefault) {
  const StrategyInfo* info = FindStrategy("mmap");
  ASSERT_NE(info, nullptr);
  std::map<std::string, std::string> defaults;
  for (const OptionSpec& o : info->options) defaults[o.name] = o.default_value;
  EXPECT_EQ(defaults, (Options{{"share", "private"}, {"fadvise", "none"}, {"populate", "off"}}));
  EXPECT_EQ(info->flags, kMapsFile);
  Params params;
  EXPECT_EQ(Params::Resolve("mmap", info->options, {{"share", "public"}}, &params).code(),
            Status::Code::kBadInput);
}

TEST(MmapStrategyOptions, EveryCombinationLoadsAShardedModelExactly) {
  test::TempDir dir;
  const test::ShardedModel model = test::WriteWlfShardedModel(dir, test::LayersAcrossShards(), 64);
  ASSERT_EQ(model.table.shards.size(), 3u);
  for (const Options& o : std::vector<Options>{
           {},
           {{"share", "shared"}},
           {{"fadvise", "sequential"}},
           {{"populate", "on"}},
           {{"share", "shared"}, {"fadvise", "sequential"}, {"populate", "on"}},
       }) {
    std::string name = "mmap";
    for (const auto& [k, v] : o) name += ":" + k + "=" + v;
    SCOPED_TRACE(name);
    std::unique_ptr<Loader> loader = MakeMmap(o, model.table);
    std::vector<TensorBytes> views;
    const Status s = loader->Load(model.path, model.table, &views);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(views.size(), model.table.tensors.size());
    for (size_t i = 0; i < views.size(); ++i) {
      EXPECT_EQ(views[i].size(), model.table.tensors[i].size) << "tensor " << i;
    }
    EXPECT_EQ(ChecksumTensors(views), model.checksum);
  }
}

// llama.cpp's recipe on a generated GGUF model of three splits.
TEST(MmapStrategyOptions, LlamaCppsRecipeLoadsAGeneratedGgufModel) {
  test::TempDir dir;
  const test::ShardedModel model = test::GenerateShardedModel(dir, "gguf", 3, 1ull << 20);
  std::unique_ptr<Loader> loader =
      MakeMmap({{"share", "shared"}, {"fadvise", "sequential"}, {"populate", "on"}}, model.table);
  std::vector<TensorBytes> views;
  const Status s = loader->Load(model.path, model.table, &views);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ChecksumTensors(views), model.checksum);
}

// MAP_SHARED would carry an in-place transform's writes into the file itself.
TEST(MmapStrategyOptions, ASharedMappingRefusesWritableViews) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  {
    std::unique_ptr<Loader> loader = MakeMmap({{"share", "shared"}}, table);
    loader->RequestWritable();
    std::vector<TensorBytes> views;
    const Status s = loader->Load(path, table, &views);
    EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.message();
    EXPECT_NE(s.message().find("share=shared"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
  // Private (the default) stays writable; a shard-by-shard load of a model refuses as one file.
  std::unique_ptr<Loader> loader = MakeMmap({}, table);
  loader->RequestWritable();
  std::vector<TensorBytes> views;
  const Status s = loader->Load(path, table, &views);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ChecksumTensors(views), w.checksum);

  const test::ShardedModel model = test::WriteWlfShardedModel(dir, test::LayersAcrossShards());
  std::unique_ptr<Loader> sharded = MakeMmap({{"share", "shared"}}, model.table);
  sharded->RequestWritable();
  std::vector<TensorBytes> sharded_views;
  EXPECT_EQ(sharded->Load(model.path, model.table, &sharded_views).code(),
            Status::Code::kUnsupported);
}

TEST(MmapStrategyOptions, PopulatedViewsAreResident) {
  test::TempDir dir;
  const test::ShardedModel model = test::GenerateShardedModel(dir, "wlf", 3, 1ull << 20);
  for (const auto& shard : model.table.shards) {
    // Out of the page cache where the filesystem allows (tmpfs keeps every page).
    const int fd = ::open(shard.path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  for (const Options& o :
       std::vector<Options>{{{"populate", "on"}},
                            {{"share", "shared"}, {"fadvise", "sequential"}, {"populate", "on"}}}) {
    SCOPED_TRACE(o.size() == 1 ? "populate=on" : "llama.cpp");
    std::unique_ptr<Loader> loader = MakeMmap(o, model.table);
    std::vector<TensorBytes> views;
    const Status s = loader->Load(model.path, model.table, &views);
    ASSERT_TRUE(s.ok()) << s.message();
    uint64_t resident = 0, pages = 0;
    CountResident(views, &resident, &pages);  // before anything reads a byte
    EXPECT_GT(pages, 0u);
    EXPECT_EQ(resident, pages);
    EXPECT_EQ(ChecksumTensors(views), model.checksum);
  }
}

}  // namespace
}  // namespace loadbench
