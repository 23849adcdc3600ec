#include "loaders/strategy/options.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "loaders/base/units.h"

namespace loadbench {
namespace {

// Parses one option value into `numbers` or `choices` (by the option's kind).
Status ParseOptionValue(const std::string& strategy, const OptionSpec& spec,
                        const std::string& text, std::map<std::string, int64_t>* numbers,
                        std::map<std::string, std::string>* choices) {
  const std::string what = fmt::format("strategy {}: option {}", strategy, spec.name);
  switch (spec.kind) {
    case OptionSpec::Kind::kBytes: {
      uint64_t v = 0;
      LB_RETURN_IF_ERROR(ParseBytes(text, what, &v));
      if (v == 0 || v > (1ull << 40)) {
        return Status::BadInput(fmt::format("{}: {} is out of range (1 B to 1 TiB)", what, text));
      }
      (*numbers)[spec.name] = static_cast<int64_t>(v);
      return Status::Ok();
    }
    case OptionSpec::Kind::kInt: {
      size_t used = 0;
      int64_t v = 0;
      try {
        v = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size()) {
        return Status::BadInput(fmt::format("{}: '{}' is not an integer", what, text));
      }
      if (v < spec.min || v > spec.max) {
        return Status::BadInput(
            fmt::format("{}: {} is out of range ({} to {})", what, v, spec.min, spec.max));
      }
      (*numbers)[spec.name] = v;
      return Status::Ok();
    }
    case OptionSpec::Kind::kChoice:
      if (std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) {
        return Status::BadInput(
            fmt::format("{}: '{}' is not one of {}", what, text, fmt::join(spec.choices, "|")));
      }
      (*choices)[spec.name] = text;
      return Status::Ok();
  }
  return Status::BadInput(what + ": unknown option kind");
}

}  // namespace

Status Params::Resolve(const std::string& strategy, const std::vector<OptionSpec>& specs,
                       const std::map<std::string, std::string>& given, Params* out) {
  Params p;
  for (const auto& [key, value] : given) {
    auto it =
        std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == key; });
    if (it == specs.end()) {
      std::string known;
      for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
      return Status::BadInput(fmt::format("strategy {}: unknown option '{}' (options: {})",
                                          strategy, key, known.empty() ? "none" : known));
    }
  }
  for (const auto& spec : specs) {
    auto it = given.find(spec.name);
    LB_RETURN_IF_ERROR(ParseOptionValue(strategy, spec,
                                        it == given.end() ? spec.default_value : it->second,
                                        &p.numbers_, &p.choices_));
  }
  *out = std::move(p);
  return Status::Ok();
}

Status Params::FromJson(const std::string& strategy, const std::vector<OptionSpec>& specs,
                        const nlohmann::json& j, Params* out) {
  if (!j.is_object())
    return Status::BadInput(fmt::format("strategy {}: options are no object", strategy));
  Params p;
  for (const OptionSpec& spec : specs) {
    const auto it = j.find(spec.name);
    const bool choice = spec.kind == OptionSpec::Kind::kChoice;
    if (it == j.end() || (choice ? !it->is_string() : !it->is_number_integer())) {
      return Status::BadInput(fmt::format("strategy {}: option {}: {}", strategy, spec.name,
                                          it == j.end() ? "missing"
                                          : choice      ? "not a word"
                                                        : "not an integer"));
    }
    LB_RETURN_IF_ERROR(ParseOptionValue(
        strategy, spec, choice ? it->get<std::string>() : it->dump(), &p.numbers_, &p.choices_));
  }
  if (j.size() != specs.size()) {
    return Status::BadInput(
        fmt::format("strategy {}: {} options given, it has {}", strategy, j.size(), specs.size()));
  }
  *out = std::move(p);
  return Status::Ok();
}

int64_t Params::Int(const std::string& name) const { return numbers_.at(name); }

const std::string& Params::Choice(const std::string& name) const { return choices_.at(name); }

nlohmann::json Params::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : numbers_) j[k] = v;
  for (const auto& [k, v] : choices_) j[k] = v;
  return j;
}

}  // namespace loadbench
