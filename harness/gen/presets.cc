// Presets. llama: a ladder of real model shapes. A target size picks the largest shape of
// which at least a quarter of its layers fit, then the layer count that fits, then grows
// the vocabulary (in steps of 64 rows) to take up the rest. moe: a rule of its own (below).
// All sizes are counted in elements with overflow-checked arithmetic; targets above
// kMaxTarget are refused.
#include "harness/gen/presets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "loaders/base/units.h"

namespace loadbench {
namespace {

// Larger than any disk this runs on; keeps tensor counts (and the planner's memory) bounded.
constexpr uint64_t kMaxTarget = 64ull << 40;  // 64 TiB
constexpr uint64_t kVocabStep = 64;
constexpr uint64_t kElemSize = 2;  // bf16 and f16

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

// The scaling rule of the llama ladder. `costs[i]`, `canon_layers[i]` and `base_vocab[i]`
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
//
// Shaped like today's MoE checkpoints at every size: Qwen3-MoE (128 experts per layer, 48
// layers at 30B parameters) below 64 GiB, DeepSeek-V3 (256 experts, 61 layers) from there. The
// rule, from the target size T:
// - experts: 128 below 64 GiB, 256 from 64 GiB on;
// - layers: 4 * log2(T / 1 MiB) - 16, rounded, at least 2 and at most 48 (128 experts) or 61
//   (256): 8 at 64 MiB, 24 at 1 GiB, 36 at 8 GiB, 48 from 64 GiB (61 from 1 TiB, DeepSeek-V3's
//   size);
// - hidden: the largest multiple of 32 with which those layers, with expert_ffn = hidden / 2,
//   and the base vocabulary (512 below 16 MiB, 32000 below 1 GiB, then Qwen3's 151936 or
//   DeepSeek-V3's 129280) fit;
// - expert_ffn: then the largest that fits those layers (about hidden / 2), and the
//   vocabulary grows in steps of 64 rows to take up the rest.
// So the tensor count (7 + 3 * experts per layer) grows with the size: thousands at 64 MiB,
// ten thousand and more from 2 GiB. Tiny targets drop to fewer layers (down to 1) and an
// expert_ffn of at least 1.

struct MoeShape {
  const char* label;
  uint64_t hidden, expert_ffn, experts, layers, vocab;
};

constexpr uint64_t kMiBytes = 1ull << 20, kGiBytes = 1ull << 30;
constexpr uint64_t kMoeBigAt = 64 * kGiBytes;  // from here 256 experts
constexpr uint64_t kMoeHiddenStep = 32;        // every tensor a multiple of 64 bytes

// attn_norm, ffn_norm; q, k, v, output; router; per expert gate, up, down.
std::optional<uint64_t> MoeLayerElements(uint64_t h, uint64_t ef, uint64_t experts) {
  auto hh = Mul(h, h);
  auto eh = Mul(experts, h);
  if (!hh || !eh) return std::nullopt;
  auto attn = Mul(4, *hh);
  auto ffn = Mul(*eh, ef);
  if (!attn || !ffn) return std::nullopt;
  auto ffn3 = Mul(3, *ffn);
  if (!ffn3) return std::nullopt;
  auto s = Add(*attn, *ffn3);
  if (!s) return std::nullopt;
  s = Add(*s, *eh);
  if (!s) return std::nullopt;
  return Add(*s, 2 * h);
}

std::optional<uint64_t> MoeElements(const MoeShape& s) {
  auto layer = MoeLayerElements(s.hidden, s.expert_ffn, s.experts);
  if (!layer) return std::nullopt;
  auto layers = Mul(*layer, s.layers);
  auto vocab = Mul(2 * s.hidden, s.vocab);  // token_embd + output
  if (!layers || !vocab) return std::nullopt;
  auto sum = Add(*layers, *vocab);
  if (!sum) return std::nullopt;
  return Add(*sum, s.hidden);  // output_norm
}

// The shape for `target_bytes` (target_elems elements) by the rule above; false when not even
// one layer of the smallest shape (hidden 32, expert_ffn 1) fits.
bool MoeFor(uint64_t target_bytes, uint64_t target_elems, MoeShape* out) {
  const bool big = target_bytes >= kMoeBigAt;
  MoeShape s{big ? "DeepSeek-V3-like" : "Qwen3-MoE-like", 0, 0, big ? 256u : 128u, 0, 0};
  const int64_t max_layers = big ? 61 : 48;
  s.vocab = target_bytes < 16 * kMiBytes ? 512
            : target_bytes < kGiBytes    ? 32000
            : big                        ? 129280
                                         : 151936;
  const double mib = static_cast<double>(target_bytes) / static_cast<double>(kMiBytes);
  int64_t layers = mib > 0 ? std::llround(4 * std::log2(mib)) - 16 : 2;
  layers = std::clamp<int64_t>(layers, 2, max_layers);
  // hidden h with expert_ffn h/2: layers * ((4 + 1.5 E) h^2 + (2 + E) h) + (2 vocab + 1) h <= T
  const double e = static_cast<double>(s.experts), l = static_cast<double>(layers);
  const double a = l * (4 + 1.5 * e), b = l * (2 + e) + 2 * static_cast<double>(s.vocab) + 1;
  const double t = static_cast<double>(target_elems);
  const double root = (-b + std::sqrt(b * b + 4 * a * t)) / (2 * a);
  uint64_t h = static_cast<uint64_t>(std::max(0.0, root)) / kMoeHiddenStep * kMoeHiddenStep;
  auto fits = [&](uint64_t hidden, uint64_t ef, uint64_t nl) {
    MoeShape c = s;
    c.hidden = hidden;
    c.expert_ffn = ef;
    c.layers = nl;
    auto n = MoeElements(c);
    return n && *n <= target_elems;
  };
  while (h > kMoeHiddenStep && !fits(h, h / 2, static_cast<uint64_t>(layers))) h -= kMoeHiddenStep;
  h = std::max(h, kMoeHiddenStep);
  // The largest expert_ffn for these layers; fewer layers when not even 1 fits.
  for (uint64_t nl = static_cast<uint64_t>(layers); nl >= 1; --nl) {
    MoeShape c = s;
    c.hidden = h;
    c.layers = nl;
    c.expert_ffn = 0;
    auto fixed = MoeElements(c);  // everything but the experts' ffn
    if (!fixed || *fixed > target_elems) continue;
    const uint64_t per_ef = nl * 3 * s.experts * h;  // elements per unit of expert_ffn
    const uint64_t ef = (target_elems - *fixed) / per_ef;
    if (ef < 1) continue;
    c.expert_ffn = ef;
    auto used = MoeElements(c);  // <= target_elems by construction
    const uint64_t extra = (target_elems - *used) / (2 * h) / kVocabStep * kVocabStep;
    c.vocab += extra;
    *out = c;
    return true;
  }
  return false;
}

void PlanMoe(const MoeShape& s, WlfDType dt, std::vector<WlfTensorSpec>* t) {
  const uint64_t h = s.hidden, ef = s.expert_ffn;
  t->reserve(s.layers * (7 + 3 * s.experts) + 3);
  t->push_back({"token_embd.weight", dt, {s.vocab, h}});
  for (uint64_t i = 0; i < s.layers; ++i) {
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
  t->push_back({"output.weight", dt, {s.vocab, h}});
}

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
    return Status::BadInput(fmt::format("unknown preset '{}' (presets: llama, moe)", preset));
  }
  if (target_bytes > kMaxTarget) {
    return Status::BadInput(fmt::format("size {} is above the largest supported size ({})",
                                        FormatBytes(target_bytes), FormatBytes(kMaxTarget)));
  }
  const uint64_t target_elems = target_bytes / kElemSize;

  ModelPlan plan;
  plan.preset = preset;
  if (preset == "moe") {
    MoeShape s;
    if (!MoeFor(target_bytes, target_elems, &s)) {
      const MoeShape smallest{"", kMoeHiddenStep, 1, 128, 1, 512};
      return Status::BadInput(fmt::format("size {} is below the smallest moe model ({})",
                                          FormatBytes(target_bytes),
                                          FormatBytes(*MoeElements(smallest) * kElemSize)));
    }
    PlanMoe(s, dtype, &plan.tensors);
    plan.description =
        fmt::format("moe ({} shape) hidden={} expert_ffn={} experts={} layers={} vocab={} dtype={}",
                    s.label, s.hidden, s.expert_ffn, s.experts, s.layers, s.vocab, dtype_name);
  } else {
    std::vector<Cost> costs;
    std::vector<uint64_t> canon_layers, base_vocab;
    for (const auto& s : kLlama) {
      costs.push_back(LlamaCost(s));
      canon_layers.push_back(s.layers);
      base_vocab.push_back(s.vocab);
    }
    Scaled sc;
    if (!Scale(costs, canon_layers, base_vocab, target_elems, &sc)) {
      // Ladder values are small: the smallest model's size cannot overflow.
      const uint64_t smallest = *Elements(costs[0], 1, base_vocab[0]) * kElemSize;
      return Status::BadInput(fmt::format("size {} is below the smallest {} model ({})",
                                          FormatBytes(target_bytes), preset,
                                          FormatBytes(smallest)));
    }
    const LlamaShape& s = kLlama[sc.rung];
    PlanLlama(s, sc.layers, sc.vocab, dtype, &plan.tensors);
    plan.description = fmt::format(
        "llama ({} shape) hidden={} ffn={} layers={} heads={} kv_heads={} vocab={} dtype={}",
        s.label, s.hidden, s.ffn, sc.layers, s.heads, s.kv_heads, sc.vocab, dtype_name);
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
