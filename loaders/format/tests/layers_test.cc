// Layers from tensor names: the forward pass's order, the first-use set, the layered groups.
#include <gtest/gtest.h>

#include "loaders/format/layers.h"

namespace loadbench {
namespace {

TensorTable TableOf(const std::vector<std::string>& names) {
  TensorTable t;
  uint64_t off = 4096;
  for (const auto& n : names) {
    t.tensors.push_back(TensorInfo{n, "bf16", {8}, off, 16});
    off += 64;
  }
  return t;
}

TEST(Layers, LayerNumbersFromTheCommonNamingSchemes) {
  EXPECT_EQ(LayerOf("blk.3.attn_q.weight"), 3);
  EXPECT_EQ(LayerOf("model.layers.12.mlp.up_proj.weight"), 12);
  EXPECT_EQ(LayerOf("transformer.h.0.attn.c_attn.weight"), 0);
  EXPECT_EQ(LayerOf("encoder.layer.7.output.dense.weight"), 7);
  EXPECT_EQ(LayerOf("blocks.2.w"), 2);
  EXPECT_EQ(LayerOf("token_embd.weight"), std::nullopt);
  EXPECT_EQ(LayerOf("output_norm.weight"), std::nullopt);
  EXPECT_EQ(LayerOf("blk.x.attn"), std::nullopt);
  EXPECT_EQ(LayerOf("myblk.3.w"), std::nullopt);  // "blk" must be a whole component
}

TEST(Layers, ForwardOrderIsEmbeddingsThenLayersAscendingThenTheRest) {
  // Alphabetical, as safetensors writers store them: layer 10 before layer 2.
  const TensorTable t = TableOf(
      {"embed", "layers.0.a", "layers.10.a", "layers.2.a", "layers.2.b", "norm", "layers.1.a"});
  EXPECT_EQ(ForwardOrder(t), (std::vector<size_t>{0, 1, 6, 3, 4, 2, 5}));
}

TEST(Layers, FirstUseIsEverythingBeforeTheLayersAndTheLowestLayer) {
  const TensorTable t = TableOf({"embed", "pos", "blk.1.a", "blk.0.a", "blk.0.b", "out"});
  EXPECT_EQ(FirstUseSet(t), (std::vector<bool>{true, true, false, true, true, false}));
  EXPECT_EQ(FirstUseSet(TableOf({"a", "b"})), (std::vector<bool>{false, false}));
}

TEST(Layers, GroupsAreConsecutiveRunsOfOneLayerInTableOrder) {
  const TensorTable t = TableOf({"embed", "blk.0.a", "blk.0.b", "blk.1.a", "blk.0.c", "out"});
  const auto g = LayerGroups(t);
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(g[0].tensors, (std::vector<size_t>{0}));
  EXPECT_EQ(g[1].tensors, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(g[1].layer, 0);
  EXPECT_EQ(g[1].begin, t.tensors[1].offset);
  EXPECT_EQ(g[1].end, t.tensors[2].offset + t.tensors[2].size);
  EXPECT_EQ(g[3].tensors, (std::vector<size_t>{4}));  // layer 0 again: a run of its own
  EXPECT_EQ(g[4].layer, std::nullopt);
  EXPECT_TRUE(LayerGroups(TensorTable{}).empty());
}

TEST(Layers, EmptyTensorsDoNotWidenAGroup) {
  TensorTable t = TableOf({"blk.0.a", "blk.0.b", "blk.0.c"});
  t.tensors[0].size = 0;
  t.tensors[0].offset = 1 << 20;  // anywhere: it holds no bytes
  const auto g = LayerGroups(t);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].begin, t.tensors[1].offset);
  EXPECT_EQ(g[0].end, t.tensors[2].offset + t.tensors[2].size);
}

}  // namespace
}  // namespace loadbench
