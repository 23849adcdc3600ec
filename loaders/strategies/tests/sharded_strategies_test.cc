// Every registered strategy (but those into GPU memory), with its defaults, loads a sharded
// model through the pipeline as a run does (strategies flagged kModel across the shards
// themselves, the others shard by shard), and the checksum the run verifies is the model's:
// every tensor's bytes read with pread from its shard, in table order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loaders/strategy/registry.h"
#include "loaders/use/pipeline.h"
#include "loaders/use/spec.h"
#include "loaders/use/use.h"
#include "tests/support/load_with.h"
#include "tests/support/sharded_model.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

struct NamedModel {
  std::string what;
  test::ShardedModel model;
};

// Three-shard models, written once per process: generated GGUF and safetensors splits (each
// shard holds embeddings, layers and outputs), and WLF shards with awkward sizes, 64-byte
// alignment and layers that cross shard boundaries.
const std::vector<NamedModel>& Models() {
  static test::TempDir gguf, safetensors, wlf;  // a folder, and an index, per model
  static const std::vector<NamedModel> models = {
      {"gguf", test::GenerateShardedModel(gguf, "gguf", 3, 1ull << 20)},
      {"safetensors", test::GenerateShardedModel(safetensors, "safetensors", 3, 1ull << 20)},
      {"wlf", test::WriteWlfShardedModel(wlf, test::LayersAcrossShards(), 64)},
  };
  return models;
}

class ShardedStrategies : public ::testing::TestWithParam<std::string> {};

TEST_P(ShardedStrategies, VerifyTheModelChecksum) {
  const StrategyInfo* info = FindStrategy(GetParam());
  ASSERT_NE(info, nullptr) << GetParam();
  if (const std::string why = info->unsupported_reason(); !why.empty()) {
    GTEST_SKIP() << GetParam() << ": " << why;
  }
  for (const NamedModel& m : Models()) {
    SCOPED_TRACE(GetParam() + " on the " + m.what + " model");
    ASSERT_EQ(m.model.table.shards.size(), 3u);
    // What a run leaves outside the process (shm's segment) is removed before and after.
    auto cleanup = [&] {
      if (info->cleanup) {
        const Status s = info->cleanup(m.model.path, nullptr);
        EXPECT_TRUE(s.ok()) << s.message();
      }
    };
    cleanup();
    Params params;
    Status s = Params::Resolve(info->name, info->options, {}, &params);
    ASSERT_TRUE(s.ok()) << s.message();
    const UseOptions use;
    {
      UsePipeline pipeline(*info, params, use, m.model.path, m.model.table);
      s = pipeline.Check();
      ASSERT_TRUE(s.ok()) << s.message();
      s = pipeline.Run();
      ASSERT_TRUE(s.ok()) << s.message();
      std::vector<uint64_t> checksums;
      std::string how;
      pipeline.Verify(&checksums, &how);
      ASSERT_EQ(checksums.size(), 1u) << how;
      EXPECT_EQ(checksums[0], m.model.checksum) << "verified by " << how;
      pipeline.Release();
    }
    cleanup();
  }
}

std::vector<std::string> EveryHostStrategy() {
  std::vector<std::string> out;
  for (const StrategyInfo* s : Strategies()) {
    if ((s->flags & (kDevice | kRemote)) == 0) out.push_back(s->name);  // local files
  }
  return out;
}
INSTANTIATE_TEST_SUITE_P(Defaults, ShardedStrategies, ::testing::ValuesIn(EveryHostStrategy()),
                         test::SpecName());

}  // namespace
}  // namespace loadbench
