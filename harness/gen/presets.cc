// Presets: a ladder of real model shapes per preset. A target size picks the largest shape of
// which at least a quarter of its layers fit, then the layer count that fits, then grows
// the vocabulary (in steps of 64 rows) to take up the rest. All sizes are counted in elements
// with overflow-checked arithmetic; targets above kMaxTarget are refused.
#include "harness/gen/presets.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "loaders/base/units.h"

namespace loadbench {
namespace {

// Larger than any disk this runs on; keeps tensor counts (and the planner's memory) bounded.
constexpr uint64_t kMaxTarget = 64ull << 40;  // 64 TiB
constexpr uint64_t kVocabStep = 64;

// Overflow-checked helpers: nullopt on overflow.
std::optional<uint64_t> Mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<uint64_t> Add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// A model shape reduced to what the scaling needs: elements of the fixed (vocab-independent)
// part, elements per layer, and elements per vocabulary row.
struct Cost {
  uint64_t per_layer = 0;
  uint64_t per_vocab_row = 0;  // embedding + output: 2 * hidden
  uint64_t fixed = 0;          // output_norm and the like
};

// Elements of a model with `layers` layers and vocabulary `vocab`; nullopt on overflow.
std::optional<uint64_t> Elements(const Cost& c, uint64_t layers, uint64_t vocab) {
  auto l = Mul(c.per_layer, layers);
  auto v = Mul(c.per_vocab_row, vocab);
  if (!l || !v) return std::nullopt;
  auto s = Add(*l, *v);
  if (!s) return std::nullopt;
  return Add(*s, c.fixed);
}

struct Scaled {
  size_t rung = 0;
  uint64_t layers = 0;
  uint64_t vocab = 0;
};

// The scaling rule shared by all presets. `costs[i]`, `canon_layers[i]` and `base_vocab[i]`
// describe rung i of the ladder, smallest first. `target_elems` is the budget in elements.
// Returns false when not even one layer of the smallest rung fits.
bool Scale(const std::vector<Cost>& costs, const std::vector<uint64_t>& canon_layers,
           const std::vector<uint64_t>& base_vocab, uint64_t target_elems, Scaled* out) {
  const size_t n = costs.size();
  // The largest rung of which at least a quarter of its canonical layers (and at least one)
  // fit with its base vocabulary: a 1 GiB llama is a shortened TinyLlama, not a 68-layer
  // stories110M, and a 14 GiB one a Llama-3-8B.
  size_t pick = 0;
  for (size_t i = 0; i < n; ++i) {
    auto base = Elements(costs[i], 0, base_vocab[i]);
    if (!base || *base > target_elems) continue;
    if ((target_elems - *base) / costs[i].per_layer >= std::max<uint64_t>(1, canon_layers[i] / 4)) {
      pick = i;
    }
  }
  // Walk down from the pick until one layer with the base vocabulary fits.
  for (size_t i = pick + 1; i-- > 0;) {
    const Cost& c = costs[i];
    auto base = Elements(c, 0, base_vocab[i]);
    if (!base || *base > target_elems) continue;
    const uint64_t layers = (target_elems - *base) / c.per_layer;
    if (layers < 1) continue;
    const uint64_t used = *base + layers * c.per_layer;  // <= target_elems by construction
    const uint64_t rest = target_elems - used;
    const uint64_t extra_vocab = rest / c.per_vocab_row / kVocabStep * kVocabStep;
    out->rung = i;
    out->layers = layers;
    out->vocab = base_vocab[i] + extra_vocab;
    return true;
  }
  return false;
}

// ---- llama ----

struct LlamaShape {
  const char* label;
  uint64_t hidden, ffn, layers, heads, kv_heads, vocab;
};

constexpr LlamaShape kLlama[] = {
    {"stories260K", 64, 172, 5, 8, 4, 512},
    {"stories15M", 288, 768, 6, 6, 6, 32000},
    {"stories42M", 512, 1376, 8, 8, 8, 32000},
    {"stories110M", 768, 2048, 12, 12, 12, 32000},
    {"TinyLlama-1.1B", 2048, 5632, 22, 32, 4, 32000},
    {"Llama-3.2-3B", 3072, 8192, 28, 24, 8, 128256},
    {"Llama-3-8B", 4096, 14336, 32, 32, 8, 128256},
    {"Llama-3-70B", 8192, 28672, 80, 64, 8, 128256},
};

uint64_t KvDim(const LlamaShape& s) { return s.hidden / s.heads * s.kv_heads; }

Cost LlamaCost(const LlamaShape& s) {
  const uint64_t h = s.hidden, f = s.ffn, kv = KvDim(s);
  Cost c;
  // attn_norm, ffn_norm; q, output; k, v; gate, up, down. Ladder values are small: no overflow.
  c.per_layer = 2 * h + 2 * h * h + 2 * kv * h + 3 * f * h;
  c.per_vocab_row = 2 * h;  // token_embd + output
  c.fixed = h;              // output_norm
  return c;
}

void PlanLlama(const LlamaShape& s, uint64_t layers, uint64_t vocab, WlfDType dt,
               std::vector<WlfTensorSpec>* t) {
  const uint64_t h = s.hidden, f = s.ffn, kv = KvDim(s);
  t->push_back({"token_embd.weight", dt, {vocab, h}});
  for (uint64_t i = 0; i < layers; ++i) {
    t->push_back({fmt::format("blk.{}.attn_norm.weight", i), dt, {h}});
    t->push_back({fmt::format("blk.{}.attn_q.weight", i), dt, {h, h}});
    t->push_back({fmt::format("blk.{}.attn_k.weight", i), dt, {kv, h}});
    t->push_back({fmt::format("blk.{}.attn_v.weight", i), dt, {kv, h}});
    t->push_back({fmt::format("blk.{}.attn_output.weight", i), dt, {h, h}});
    t->push_back({fmt::format("blk.{}.ffn_norm.weight", i), dt, {h}});
    t->push_back({fmt::format("blk.{}.ffn_gate.weight", i), dt, {f, h}});
    t->push_back({fmt::format("blk.{}.ffn_up.weight", i), dt, {f, h}});
    t->push_back({fmt::format("blk.{}.ffn_down.weight", i), dt, {h, f}});
  }
  t->push_back({"output_norm.weight", dt, {h}});
  t->push_back({"output.weight", dt, {vocab, h}});
}

// ---- moe ----

struct MoeShape {
  const char* label;
  uint64_t hidden, expert_ffn, experts, layers, vocab;
};

constexpr MoeShape kMoe[] = {
    {"tiny MoE", 64, 32, 16, 4, 512},
    {"small MoE", 512, 256, 32, 8, 32000},
    {"medium MoE", 1024, 512, 64, 16, 32000},
    {"Qwen-MoE-A2.7B-like", 2048, 1408, 64, 24, 151936},
};

Cost MoeCost(const MoeShape& s) {
  const uint64_t h = s.hidden, ef = s.expert_ffn, e = s.experts;
  Cost c;
  // attn_norm, ffn_norm; q, k, v, output; router; per expert gate, up, down.
  c.per_layer = 2 * h + 4 * h * h + e * h + e * 3 * ef * h;
  c.per_vocab_row = 2 * h;
  c.fixed = h;
  return c;
}

void PlanMoe(const MoeShape& s, uint64_t layers, uint64_t vocab, WlfDType dt,
             std::vector<WlfTensorSpec>* t) {
  const uint64_t h = s.hidden, ef = s.expert_ffn;
  t->push_back({"token_embd.weight", dt, {vocab, h}});
  for (uint64_t i = 0; i < layers; ++i) {
    t->push_back({fmt::format("blk.{}.attn_norm.weight", i), dt, {h}});
    t->push_back({fmt::format("blk.{}.attn_q.weight", i), dt, {h, h}});
    t->push_back({fmt::format("blk.{}.attn_k.weight", i), dt, {h, h}});
    t->push_back({fmt::format("blk.{}.attn_v.weight", i), dt, {h, h}});
    t->push_back({fmt::format("blk.{}.attn_output.weight", i), dt, {h, h}});
    t->push_back({fmt::format("blk.{}.ffn_norm.weight", i), dt, {h}});
    t->push_back({fmt::format("blk.{}.ffn_gate_inp.weight", i), dt, {s.experts, h}});
    for (uint64_t e = 0; e < s.experts; ++e) {
      t->push_back({fmt::format("blk.{}.ffn_gate.{}.weight", i, e), dt, {ef, h}});
      t->push_back({fmt::format("blk.{}.ffn_up.{}.weight", i, e), dt, {ef, h}});
      t->push_back({fmt::format("blk.{}.ffn_down.{}.weight", i, e), dt, {h, ef}});
    }
  }
  t->push_back({"output_norm.weight", dt, {h}});
  t->push_back({"output.weight", dt, {vocab, h}});
}

constexpr uint64_t kElemSize = 2;  // bf16 and f16

}  // namespace

std::vector<std::string> PresetNames() { return {"llama", "moe"}; }

Status PlanPreset(const std::string& preset, uint64_t target_bytes, WlfDType dtype,
                  ModelPlan* out) {
  std::string dtype_name;
  if (dtype != WlfDType::kBF16 && dtype != WlfDType::kF16) {
    if (!WlfDTypeInfo(static_cast<uint32_t>(dtype), &dtype_name, nullptr)) dtype_name = "?";
    return Status::BadInput(fmt::format(
        "dtype {} is not supported by the generator presets; use bf16 or f16", dtype_name));
  }
  dtype_name = dtype == WlfDType::kBF16 ? "bf16" : "f16";
  if (preset != "llama" && preset != "moe") {
    return Status::BadInput(
        fmt::format("unknown preset '{}' (presets: llama, moe)", preset));
  }
  if (target_bytes > kMaxTarget) {
    return Status::BadInput(fmt::format("size {} is above the largest supported size ({})",
                                        FormatBytes(target_bytes), FormatBytes(kMaxTarget)));
  }
  const uint64_t target_elems = target_bytes / kElemSize;

  std::vector<Cost> costs;
  std::vector<uint64_t> canon_layers, base_vocab;
  if (preset == "llama") {
    for (const auto& s : kLlama) {
      costs.push_back(LlamaCost(s));
      canon_layers.push_back(s.layers);
      base_vocab.push_back(s.vocab);
    }
  } else {
    for (const auto& s : kMoe) {
      costs.push_back(MoeCost(s));
      canon_layers.push_back(s.layers);
      base_vocab.push_back(s.vocab);
    }
  }

  Scaled sc;
  if (!Scale(costs, canon_layers, base_vocab, target_elems, &sc)) {
    // Ladder values are small: the smallest model's size cannot overflow.
    const uint64_t smallest = *Elements(costs[0], 1, base_vocab[0]) * kElemSize;
    return Status::BadInput(fmt::format("size {} is below the smallest {} model ({})",
                                        FormatBytes(target_bytes), preset,
                                        FormatBytes(smallest)));
  }

  ModelPlan plan;
  plan.preset = preset;
  if (preset == "llama") {
    const LlamaShape& s = kLlama[sc.rung];
    PlanLlama(s, sc.layers, sc.vocab, dtype, &plan.tensors);
    plan.description = fmt::format(
        "llama ({} shape) hidden={} ffn={} layers={} heads={} kv_heads={} vocab={} dtype={}",
        s.label, s.hidden, s.ffn, sc.layers, s.heads, s.kv_heads, sc.vocab, dtype_name);
  } else {
    const MoeShape& s = kMoe[sc.rung];
    PlanMoe(s, sc.layers, sc.vocab, dtype, &plan.tensors);
    plan.description = fmt::format(
        "moe ({} shape) hidden={} expert_ffn={} experts={} layers={} vocab={} dtype={}", s.label,
        s.hidden, s.expert_ffn, s.experts, sc.layers, sc.vocab, dtype_name);
  }
  uint64_t total = 0;
  for (const auto& t : plan.tensors) {
    uint64_t elems = 1;
    for (uint64_t d : t.shape) elems *= d;  // bounded by the target: no overflow
    total += elems * kElemSize;
  }
  plan.tensor_bytes = total;
  *out = std::move(plan);
  return Status::Ok();
}

}  // namespace loadbench
