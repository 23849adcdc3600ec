#include "harness/gen/presets.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace loadbench {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

uint64_t Bytes(const WlfTensorSpec& t) {
  uint64_t n = 2;
  for (uint64_t d : t.shape) n *= d;
  return n;
}

std::map<std::string, std::vector<uint64_t>> Shapes(const ModelPlan& p) {
  std::map<std::string, std::vector<uint64_t>> m;
  for (const auto& t : p.tensors) m[t.name] = t.shape;
  return m;
}

TEST(PresetsTest, NamesListed) {
  auto names = PresetNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "llama"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "moe"), names.end());
}

TEST(PresetsTest, ReachesTargetWithoutExceedingIt) {
  for (const std::string preset : {"llama", "moe"}) {
    for (uint64_t target : {1 * kMiB, 64 * kMiB, 2 * kGiB, 14 * kGiB, 100 * kGiB}) {
      SCOPED_TRACE(preset + " " + std::to_string(target));
      ModelPlan p;
      ASSERT_TRUE(PlanPreset(preset, target, WlfDType::kBF16, &p).ok());
      uint64_t sum = 0;
      for (const auto& t : p.tensors) {
        EXPECT_EQ(t.dtype, WlfDType::kBF16);
        sum += Bytes(t);
      }
      EXPECT_EQ(sum, p.tensor_bytes);
      EXPECT_LE(p.tensor_bytes, target);
      EXPECT_GE(static_cast<double>(p.tensor_bytes), 0.97 * static_cast<double>(target));
      EXPECT_EQ(p.preset, preset);
      EXPECT_EQ(p.description.find('\n'), std::string::npos);
      EXPECT_NE(p.description.find("dtype=bf16"), std::string::npos) << p.description;
    }
  }
}

TEST(PresetsTest, LlamaNamesAndShapes) {
  ModelPlan p;
  ASSERT_TRUE(PlanPreset("llama", 2 * kGiB, WlfDType::kF16, &p).ok());
  // 2 GiB: the TinyLlama shape, about 20 layers.
  EXPECT_NE(p.description.find("TinyLlama-1.1B"), std::string::npos) << p.description;
  EXPECT_NE(p.description.find("dtype=f16"), std::string::npos) << p.description;
  auto s = Shapes(p);
  ASSERT_TRUE(s.count("token_embd.weight"));
  const uint64_t vocab = s["token_embd.weight"][0];
  EXPECT_GE(vocab, 32000u);
  EXPECT_EQ(vocab % 64, 0u);
  EXPECT_EQ(s["token_embd.weight"], (std::vector<uint64_t>{vocab, 2048}));
  EXPECT_EQ(s["output.weight"], (std::vector<uint64_t>{vocab, 2048}));
  EXPECT_EQ(s["output_norm.weight"], (std::vector<uint64_t>{2048}));
  EXPECT_EQ(s["blk.0.attn_norm.weight"], (std::vector<uint64_t>{2048}));
  EXPECT_EQ(s["blk.0.attn_q.weight"], (std::vector<uint64_t>{2048, 2048}));
  EXPECT_EQ(s["blk.0.attn_k.weight"], (std::vector<uint64_t>{256, 2048}));  // 2048/32*4
  EXPECT_EQ(s["blk.0.attn_v.weight"], (std::vector<uint64_t>{256, 2048}));
  EXPECT_EQ(s["blk.0.attn_output.weight"], (std::vector<uint64_t>{2048, 2048}));
  EXPECT_EQ(s["blk.0.ffn_norm.weight"], (std::vector<uint64_t>{2048}));
  EXPECT_EQ(s["blk.0.ffn_gate.weight"], (std::vector<uint64_t>{5632, 2048}));
  EXPECT_EQ(s["blk.0.ffn_up.weight"], (std::vector<uint64_t>{5632, 2048}));
  EXPECT_EQ(s["blk.0.ffn_down.weight"], (std::vector<uint64_t>{2048, 5632}));
  const size_t layers = (p.tensors.size() - 3) / 9;
  EXPECT_EQ(p.tensors.size(), layers * 9 + 3);
  EXPECT_GE(layers, 18u);
  EXPECT_LE(layers, 22u);
  EXPECT_TRUE(s.count("blk." + std::to_string(layers - 1) + ".ffn_down.weight"));
  EXPECT_FALSE(s.count("blk." + std::to_string(layers) + ".ffn_down.weight"));
  EXPECT_NE(p.description.find("layers=" + std::to_string(layers)), std::string::npos);
  EXPECT_NE(p.description.find("vocab=" + std::to_string(vocab)), std::string::npos);
  // File order: embedding first, output last.
  EXPECT_EQ(p.tensors.front().name, "token_embd.weight");
  EXPECT_EQ(p.tensors[1].name, "blk.0.attn_norm.weight");
  EXPECT_EQ(p.tensors.back().name, "output.weight");
}

TEST(PresetsTest, Llama14GiBIsLlama3_8BShape) {
  ModelPlan p;
  ASSERT_TRUE(PlanPreset("llama", 14 * kGiB, WlfDType::kBF16, &p).ok());
  EXPECT_NE(p.description.find("Llama-3-8B"), std::string::npos) << p.description;
  auto s = Shapes(p);
  EXPECT_EQ(s["blk.0.attn_k.weight"], (std::vector<uint64_t>{1024, 4096}));
  EXPECT_EQ(s["blk.0.ffn_gate.weight"], (std::vector<uint64_t>{14336, 4096}));
  EXPECT_GE(s["token_embd.weight"][0], 128256u);
}

TEST(PresetsTest, SmallSizesUseSmallShapes) {
  ModelPlan p;
  ASSERT_TRUE(PlanPreset("llama", 1 * kMiB, WlfDType::kBF16, &p).ok());
  EXPECT_NE(p.description.find("hidden=64 "), std::string::npos) << p.description;
  ASSERT_TRUE(PlanPreset("llama", 64 * kMiB, WlfDType::kBF16, &p).ok());
  EXPECT_NE(p.description.find("stories"), std::string::npos) << p.description;
}

TEST(PresetsTest, MoeHasThousandsOfTensors) {
  ModelPlan p;
  ASSERT_TRUE(PlanPreset("moe", 2 * kGiB, WlfDType::kBF16, &p).ok());
  EXPECT_GT(p.tensors.size(), 1000u) << p.description;
  auto s = Shapes(p);
  ASSERT_TRUE(s.count("blk.0.ffn_gate_inp.weight"));
  const uint64_t experts = s["blk.0.ffn_gate_inp.weight"][0];
  const uint64_t hidden = s["blk.0.ffn_gate_inp.weight"][1];
  EXPECT_EQ(s["blk.0.attn_q.weight"], (std::vector<uint64_t>{hidden, hidden}));
  ASSERT_TRUE(s.count("blk.0.ffn_gate.0.weight"));
  const uint64_t eff = s["blk.0.ffn_gate.0.weight"][0];
  EXPECT_EQ(s["blk.0.ffn_gate.0.weight"], (std::vector<uint64_t>{eff, hidden}));
  EXPECT_EQ(s["blk.0.ffn_up.0.weight"], (std::vector<uint64_t>{eff, hidden}));
  EXPECT_EQ(s["blk.0.ffn_down.0.weight"], (std::vector<uint64_t>{hidden, eff}));
  const std::string last = "blk.0.ffn_down." + std::to_string(experts - 1) + ".weight";
  EXPECT_TRUE(s.count(last));
  EXPECT_FALSE(s.count("blk.0.ffn_down." + std::to_string(experts) + ".weight"));
  EXPECT_NE(p.description.find("experts=" + std::to_string(experts)), std::string::npos)
      << p.description;
  // Names are unique.
  EXPECT_EQ(s.size(), p.tensors.size());
}

// Today's MoE checkpoints at every size: 128 experts per layer (Qwen3-MoE) below 64 GiB, 256
// (DeepSeek-V3) from there; layers and tensors grow with the size, to tens of thousands.
TEST(PresetsTest, MoeLooksLikeTodaysCheckpoints) {
  struct Case {
    uint64_t size;
    uint64_t experts, layers;
  };
  size_t last_count = 0;
  for (const Case& c :
       {Case{64 * kMiB, 128, 8}, Case{1 * kGiB, 128, 24}, Case{8 * kGiB, 128, 36},
        Case{63 * kGiB, 128, 48}, Case{64 * kGiB, 256, 48}, Case{1024 * kGiB, 256, 61}}) {
    SCOPED_TRACE(c.size);
    ModelPlan p;
    ASSERT_TRUE(PlanPreset("moe", c.size, WlfDType::kBF16, &p).ok());
    auto s = Shapes(p);
    const uint64_t experts = s["blk.0.ffn_gate_inp.weight"][0];
    const uint64_t hidden = s["blk.0.ffn_gate_inp.weight"][1];
    const uint64_t eff = s["blk.0.ffn_gate.0.weight"][0];
    EXPECT_EQ(experts, c.experts) << p.description;
    const size_t layers = (p.tensors.size() - 3) / (7 + 3 * experts);
    EXPECT_EQ(p.tensors.size(), layers * (7 + 3 * experts) + 3);
    EXPECT_EQ(layers, c.layers) << p.description;
    EXPECT_NE(p.description.find(experts == 128 ? "Qwen3-MoE" : "DeepSeek-V3"), std::string::npos)
        << p.description;
    EXPECT_EQ(hidden % 32, 0u);
    EXPECT_GE(eff, hidden / 2) << p.description;
    EXPECT_LE(eff, hidden) << p.description;
    EXPECT_LE(p.tensor_bytes, c.size);
    EXPECT_GE(static_cast<double>(p.tensor_bytes), 0.999 * static_cast<double>(c.size));
    EXPECT_GT(p.tensors.size(), last_count) << "tensors must grow with the size";
    if (c.size >= 2 * kGiB) {
      EXPECT_GE(p.tensors.size(), 10000u) << p.description;
    }
    last_count = p.tensors.size();
  }
}

// Sizes between and around the rule's steps (vocabulary, experts, the layer cap) keep the
// presets' accuracy and grow the tensor count (never shrink it) with the size.
TEST(PresetsTest, MoeAccurateAndMonotoneAcrossSizes) {
  size_t last_count = 0;
  for (uint64_t size = 1 * kMiB; size <= 4096 * kGiB; size = size * 3 / 2 + 12345) {
    SCOPED_TRACE(size);
    ModelPlan p;
    ASSERT_TRUE(PlanPreset("moe", size, WlfDType::kF16, &p).ok());
    EXPECT_LE(p.tensor_bytes, size);
    EXPECT_GE(static_cast<double>(p.tensor_bytes), 0.97 * static_cast<double>(size));
    EXPECT_GE(p.tensors.size(), last_count) << p.description;
    last_count = p.tensors.size();
  }
  ModelPlan p;  // near the smallest: hidden 32, expert_ffn of a few
  ASSERT_TRUE(PlanPreset("moe", 160 * 1024, WlfDType::kBF16, &p).ok());
  EXPECT_NE(p.description.find("experts=128"), std::string::npos) << p.description;
}

TEST(PresetsTest, TooSmallIsBadInput) {
  ModelPlan p;
  for (const std::string preset : {"llama", "moe"}) {
    Status st = PlanPreset(preset, 1000, WlfDType::kBF16, &p);
    EXPECT_EQ(st.code(), Status::Code::kBadInput);
    EXPECT_NE(st.message().find("below the smallest " + preset + " model"), std::string::npos)
        << st.message();
  }
  EXPECT_EQ(PlanPreset("llama", 0, WlfDType::kBF16, &p).code(), Status::Code::kBadInput);
}

TEST(PresetsTest, UnknownPresetOrDtypeIsBadInput) {
  ModelPlan p;
  Status st = PlanPreset("gpt9", 64 * kMiB, WlfDType::kBF16, &p);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_NE(st.message().find("gpt9"), std::string::npos);
  EXPECT_EQ(PlanPreset("llama", 64 * kMiB, WlfDType::kF32, &p).code(), Status::Code::kBadInput);
  EXPECT_EQ(PlanPreset("llama", 64 * kMiB, WlfDType::kI8, &p).code(), Status::Code::kBadInput);
}

TEST(PresetsTest, HugeSizeDoesNotOverflow) {
  ModelPlan p;
  EXPECT_EQ(PlanPreset("llama", UINT64_MAX, WlfDType::kBF16, &p).code(), Status::Code::kBadInput);
}

}  // namespace
}  // namespace loadbench
