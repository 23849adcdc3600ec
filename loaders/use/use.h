// What happens to the tensors after a strategy has brought them in: the "use options" every
// strategy spec accepts beside its own (`mmap:consume=forward:bind=copy`). A framework binds the
// bytes to its tensors (pointing into them or copying them), may transform them (byte order,
// dtype), and then uses them; each of these can undo what the strategy gained, so each is
// measured as part of the run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/strategy/strategy.h"
#include "loaders/use/spec.h"

namespace loadbench {

struct UseOptions {
  std::string consume = "checksum";    // checksum | forward | random
  std::string bind = "view";           // view | copy
  std::string transform = "none";      // none | byteswap | bf16_to_f32
  std::string place = "separate";      // separate | inplace
  std::string bind_buffer = "malloc";  // malloc | thp: memory for copies and separate transforms
  std::string unaligned = "read";      // read | copy: what forward does with an unaligned tensor
  int instances = 1;                   // model instances in the process
  bool registry = true;                // instances share one load through the registry
  int64_t seed = 1;                    // the random consumer's order
  nlohmann::ordered_json ToJson() const;
};

// The use options' declarations, shown by `list` beside every strategy's own.
const std::vector<OptionSpec>& UseOptionSpecs();

// `label=TEXT`, taken by every strategy and changing nothing in the load: two points of one
// strategy under two labels are two groups of runs (an A/A comparison). It stays in the spec's
// text and goes into the record as `label`.
inline constexpr const char* kLabelOption = "label";

// The label of a spec, empty without one; kBadInput for one that is empty or holds characters
// other than letters, digits, '_', '-' and '.'.
Status LabelOf(const StrategySpec& spec, std::string* label);

// Resolves a spec: its use options into `use`, its label aside, and the rest against the
// strategy's own options into `params`. kBadInput names the strategy, the option and the reason;
// kUnsupported for a combination that cannot be done at all (an in-place widening, a layered
// strategy with several instances), with the reason.
Status ResolveSpec(const StrategyInfo& info, const StrategySpec& spec, Params* params,
                   UseOptions* use);

// A spec as a plan carries it and a worker is told it: resolved once, when the experiment is
// read, so that nothing after parses or resolves its text again.
struct ResolvedSpec {
  const StrategyInfo* info = nullptr;  // null: no strategy (a ceiling, a command, not built)
  Params params;
  UseOptions use;
};

// ResolveSpec into `out` (out->info: the strategy the spec names, which must be registered).
Status ResolveSpec(const StrategySpec& spec, ResolvedSpec* out);

// {"name": ..., "params": {...}, "use": {...}} (null without a strategy), and back by one
// function: the strategy found by name, its options and use options checked as ResolveSpec
// checks them. kBadInput names what is wrong.
nlohmann::ordered_json ResolvedJson(const ResolvedSpec& r);
Status ResolvedOf(const nlohmann::ordered_json& j, ResolvedSpec* out);

}  // namespace loadbench
