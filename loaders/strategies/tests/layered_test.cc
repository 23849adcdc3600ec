// The layered strategy on sharded models: a layer whose tensors lie in several shards is one
// mapping per shard, every byte arrives, and the details count the layers and their bytes.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/format/layers.h"
#include "loaders/format/model.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/shard_by_shard.h"
#include "loaders/use/spec.h"
#include "tests/support/sharded_model.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

struct Walked {
  Status status;
  std::vector<std::vector<std::byte>> bytes;  // each tensor, copied while its layer was held
  std::vector<size_t> group_sizes;            // tensors per group, in the order handed out
  nlohmann::json details;
  std::vector<TensorBytes> views() const {
    std::vector<TensorBytes> v;
    for (const auto& b : bytes) v.emplace_back(b.data(), b.size());
    return v;
  }
};

Walked Walk(const test::ShardedModel& model,
            const std::map<std::string, std::string>& options = {}) {
  Walked out;
  const StrategyInfo* info = FindStrategy("layered");
  Params params;
  out.status = Params::Resolve("layered", info->options, options, &params);
  if (!out.status.ok()) return out;
  std::unique_ptr<Loader> loader = MakeModelLoader(*info, params, model.table);
  out.bytes.resize(model.table.tensors.size());
  out.status =
      loader->LoadGroups(model.path, model.table, LayerGroups(model.table),
                         [&](const TensorGroup& g, const std::vector<TensorBytes>& views) {
                           out.group_sizes.push_back(g.tensors.size());
                           for (size_t k = 0; k < g.tensors.size(); ++k) {
                             out.bytes[g.tensors[k]].assign(views[k].begin(), views[k].end());
                           }
                           return Status::Ok();
                         });
  out.details = loader->Details();
  return out;
}

TEST(LayeredStrategy, IsAModelStrategy) {
  const StrategyInfo* info = FindStrategy("layered");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->flags, kMapsFile | kStreams | kModel);
}

TEST(LayeredStrategy, GroupsCarryOneRangePerShardTheyTouch) {
  test::TempDir dir;
  const test::ShardedModel model = test::WriteWlfShardedModel(dir, test::LayersAcrossShards());
  const TensorTable& t = model.table;
  const std::vector<TensorGroup> groups = LayerGroups(t);
  // token_embd | blk.0 (shards 0, 1) | blk.1 (shards 1, 2) | output_norm, output
  ASSERT_EQ(groups.size(), 4u);
  ASSERT_EQ(groups[1].layer, 0);
  ASSERT_EQ(groups[1].ranges.size(), 2u);
  EXPECT_EQ(groups[1].ranges[0].shard, 0u);
  EXPECT_EQ(groups[1].ranges[0].begin, t.tensors[1].offset);
  EXPECT_EQ(groups[1].ranges[0].end, t.tensors[2].offset + t.tensors[2].size);
  EXPECT_EQ(groups[1].ranges[1].shard, 1u);
  EXPECT_EQ(groups[1].ranges[1].begin, t.tensors[3].offset);
  EXPECT_EQ(groups[1].ranges[1].end, t.tensors[4].offset + t.tensors[4].size);
  // begin and end are the first range's.
  EXPECT_EQ(groups[1].begin, groups[1].ranges[0].begin);
  EXPECT_EQ(groups[1].end, groups[1].ranges[0].end);
  // Layer 1 starts with an empty tensor: it does not widen its range in shard 1.
  ASSERT_EQ(groups[2].ranges.size(), 2u);
  EXPECT_EQ(groups[2].ranges[0].shard, 1u);
  EXPECT_EQ(groups[2].ranges[0].begin, t.tensors[6].offset);
  EXPECT_EQ(groups[2].ranges[1].shard, 2u);
  ASSERT_EQ(groups[3].ranges.size(), 1u);
  EXPECT_EQ(groups[3].ranges[0].shard, 2u);

  // A single file: one range, the group's begin and end.
  const TensorTable single = ShardTable(t, 0);
  for (const TensorGroup& g : LayerGroups(single)) {
    ASSERT_EQ(g.ranges.size(), 1u);
    EXPECT_EQ(g.ranges[0].shard, 0u);
    EXPECT_EQ(g.ranges[0].begin, g.begin);
    EXPECT_EQ(g.ranges[0].end, g.end);
  }
}

TEST(LayeredStrategy, LayersAcrossShardsLoadEveryByte) {
  for (uint64_t align : {64u, 4096u}) {
    SCOPED_TRACE("align " + std::to_string(align));
    const test::TempDir sub;
    const test::ShardedModel model =
        test::WriteWlfShardedModel(sub, test::LayersAcrossShards(), align);
    for (const std::map<std::string, std::string>& o :
         std::vector<std::map<std::string, std::string>>{
             {},
             {{"advice", "none"}, {"ahead", "off"}, {"drop", "on"}},
             {{"advice", "sequential"}}}) {
      const Walked w = Walk(model, o);
      ASSERT_TRUE(w.status.ok()) << w.status.message();
      EXPECT_EQ(w.group_sizes, (std::vector<size_t>{1, 4, 3, 2}));
      EXPECT_EQ(ChecksumTensors(w.views()), model.checksum);
      // Every group holds bytes; its size is the sum of its mappings (page-aligned starts).
      const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
      uint64_t largest = 0;
      for (const TensorGroup& g : LayerGroups(model.table)) {
        uint64_t bytes = 0;
        for (const ShardRange& r : g.ranges) {
          if (r.end > r.begin) bytes += r.end - r.begin / page * page;
        }
        largest = std::max(largest, bytes);
      }
      EXPECT_EQ(w.details["groups_mapped"], 4);
      EXPECT_EQ(w.details["largest_group_bytes"], largest);
    }
  }
}

TEST(LayeredStrategy, LoadsAGeneratedShardedModel) {
  for (const char* format : {"gguf", "safetensors"}) {
    SCOPED_TRACE(format);
    const test::TempDir sub;
    const test::ShardedModel model = test::GenerateShardedModel(sub, format, 3, 1ull << 20);
    const Walked w = Walk(model);
    ASSERT_TRUE(w.status.ok()) << w.status.message();
    EXPECT_EQ(ChecksumTensors(w.views()), model.checksum);
  }
}

TEST(LayeredStrategy, AMissingShardIsBadInputNamingIt) {
  test::TempDir dir;
  const test::ShardedModel model = test::WriteWlfShardedModel(dir, test::LayersAcrossShards());
  const std::string gone = model.table.shards[2].path;
  ASSERT_EQ(::unlink(gone.c_str()), 0);
  const Walked w = Walk(model);
  EXPECT_EQ(w.status.code(), Status::Code::kBadInput);
  EXPECT_NE(w.status.message().find(gone), std::string::npos) << w.status.message();
}

}  // namespace
}  // namespace loadbench
