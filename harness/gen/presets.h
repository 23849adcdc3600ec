// Model-shaped tensor lists for the generator: realistic names and shapes, scaled to a size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/format/wlf.h"

namespace loadbench {

struct ModelPlan {
  std::string preset;       // "llama", "moe"
  std::string description;  // one line: "llama hidden=2048 ffn=5632 layers=21 ... vocab=33472"
  std::vector<WlfTensorSpec> tensors;  // in file order
  uint64_t tensor_bytes = 0;           // sum of tensor sizes
};

// Names of the presets, for --help and error messages.
std::vector<std::string> PresetNames();

// Plans the tensors of `preset` with element type `dtype` (bf16 or f16) so that their total
// size is as close to `target_bytes` as the shapes allow without exceeding it.
// kBadInput for an unknown preset or dtype, or a size below the preset's smallest model.
Status PlanPreset(const std::string& preset, uint64_t target_bytes, WlfDType dtype, ModelPlan* out);

}  // namespace loadbench
