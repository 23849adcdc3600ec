// The strategy interface and its registry. A strategy is one way of getting every tensor's
// bytes into memory; it lives in one file under loaders/, declares its options beside its code,
// and registers itself by name at the bottom of that file with LOADBENCH_REGISTER_STRATEGY.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/format/tensor_table.h"
#include "loaders/status.h"

namespace loadbench {

using TensorBytes = std::span<const std::byte>;

// One option of a strategy, e.g. fread's `buffer`.
struct OptionSpec {
  enum class Kind { kBytes, kInt };
  std::string name;
  Kind kind;
  std::string default_value;  // as a user would write it: "1MiB", "4"
  std::string help;
};

// Resolved option values of one run: every declared option, defaulted where not given.
class Params {
 public:
  // Fills in defaults and checks every given key against `specs`. kBadInput names the strategy,
  // the key and the reason.
  static Status Resolve(const std::string& strategy, const std::vector<OptionSpec>& specs,
                        const std::map<std::string, std::string>& given, Params* out);
  int64_t Int(const std::string& name) const;
  uint64_t Bytes(const std::string& name) const { return static_cast<uint64_t>(Int(name)); }
  // {"buffer": 1048576, ...}: every option as a number, for the `params` field of a run.
  nlohmann::json ToJson() const;

 private:
  std::map<std::string, int64_t> values_;
};

// A strategy loads one file. Create one per run; it is not reused and not shared by threads.
class Loader {
 public:
  virtual ~Loader() = default;

  // Brings the tensors of `table` (read from the file at `path`) into memory as this strategy
  // does, and on success stores in `views` one span per tensor, in table order. Views stay
  // valid until this Loader is destroyed. A view need not be resident yet (a mapping faults
  // on first touch): the load is complete only once a consumer has read every byte.
  // Errors: kIOError when the system refuses, kUnsupported when this machine cannot do it,
  // kBadInput when the file is unusable; each message names the file.
  virtual Status Load(const std::string& path, const TensorTable& table,
                      std::vector<TensorBytes>* views) = 0;
};

struct StrategyInfo {
  std::string name;
  std::string summary;  // one line: the mechanism
  std::vector<OptionSpec> options;
  std::function<std::unique_ptr<Loader>(const Params&)> make;
  // Empty when the strategy can run here, else the reason it cannot. May probe the kernel.
  std::function<std::string()> unsupported_reason = [] { return std::string(); };
};

// Adds a strategy; called from static initializers, one per strategy file.
bool RegisterStrategy(StrategyInfo info);
// Every registered strategy, sorted by name.
std::vector<const StrategyInfo*> Strategies();
// nullptr when no strategy has this name.
const StrategyInfo* FindStrategy(const std::string& name);

// A strategy with its options as written on the command line: "fread:buffer=4MiB".
struct StrategySpec {
  std::string name;
  std::map<std::string, std::string> options;
  std::string text;  // as given, for messages
};

// Parses "a,b:k=v:k2=v2,c". kBadInput for empty names, malformed options or unknown strategies.
Status ParseStrategyList(const std::string& text, std::vector<StrategySpec>* out);

#define LOADBENCH_REGISTER_STRATEGY(info_expr) \
  [[maybe_unused]] static const bool lb_registered_ = ::loadbench::RegisterStrategy(info_expr)

}  // namespace loadbench
