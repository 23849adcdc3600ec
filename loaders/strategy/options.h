// A strategy's options (fread's `chunk`, every allocating strategy's `buffer`): declared beside
// the strategy, resolved from what the user wrote into typed values for one run.
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loaders/base/status.h"

namespace loadbench {

// One option of a strategy, e.g. fread's `chunk`.
struct OptionSpec {
  // kBytes: a size ("4MiB"), 1 B to 1 TiB. kInt: an integer in [min, max]. kChoice: one word
  // of `choices` ("on", "thp").
  enum class Kind { kBytes, kInt, kChoice };
  std::string name;
  Kind kind;
  std::string default_value;  // as a user would write it: "1MiB", "4", "off"
  std::string help;
  std::vector<std::string> choices = {};  // kChoice only
  int64_t min = 0;                        // kInt only
  int64_t max = INT64_MAX;                // kInt only
};

// The two-word choice that on/off options share.
inline const std::vector<std::string> kOnOff = {"off", "on"};

// Resolved option values of one run: every declared option, defaulted where not given.
class Params {
 public:
  // Fills in defaults and checks every given key against `specs`. kBadInput names the strategy,
  // the key and the reason.
  static Status Resolve(const std::string& strategy, const std::vector<OptionSpec>& specs,
                        const std::map<std::string, std::string>& given, Params* out);
  // The value of a declared option of the matching kind; the name must be declared.
  int64_t Int(const std::string& name) const;
  uint64_t Bytes(const std::string& name) const { return static_cast<uint64_t>(Int(name)); }
  const std::string& Choice(const std::string& name) const;
  bool On(const std::string& name) const { return Choice(name) == "on"; }
  // {"chunk": 1048576, "buffer": "malloc", ...}: sizes and integers as numbers, choices as
  // words, for the `params` field of a run and for what a worker is told.
  nlohmann::json ToJson() const;
  // Back from ToJson's object: every option of `specs` and nothing else, a size or an integer
  // as a number, a choice as one of its words, each in its range. kBadInput names the strategy,
  // the option and the reason.
  static Status FromJson(const std::string& strategy, const std::vector<OptionSpec>& specs,
                         const nlohmann::json& j, Params* out);

 private:
  std::map<std::string, int64_t> numbers_;
  std::map<std::string, std::string> choices_;
};

}  // namespace loadbench
