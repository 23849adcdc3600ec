// `loadbench list`: the strategies, their options and flags, and whether each runs here.
#include <climits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "harness/cli/commands.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/use.h"

namespace loadbench::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string KindText(const OptionSpec& o) {
  switch (o.kind) {
    case OptionSpec::Kind::kBytes:
      return "size";
    case OptionSpec::Kind::kInt:
      return o.max == INT64_MAX ? fmt::format("integer >= {}", o.min)
                                : fmt::format("integer {}..{}", o.min, o.max);
    case OptionSpec::Kind::kChoice:
      return fmt::format("{}", fmt::join(o.choices, "|"));
  }
  return "";
}

Json StrategyJson(const StrategyInfo& s) {
  const std::string why = s.unsupported_reason();
  Json j{{"name", s.name},
         {"summary", s.summary},
         {"flags", s.flags == 0 ? "" : FlagNames(s.flags)},
         {"supported", why.empty()},
         {"unsupported_reason", why.empty() ? Json() : Json(why)},
         {"options", Json::array()}};
  for (const auto& o : s.options) {
    j["options"].push_back(
        {{"name", o.name}, {"kind", KindText(o)}, {"default", o.default_value}, {"help", o.help}});
  }
  return j;
}

void PrintStrategy(const StrategyInfo& s) {
  const std::string why = s.unsupported_reason();
  fmt::print("{}\n  {}\n", s.name, s.summary);
  fmt::print("  supported here: {}\n", why.empty() ? "yes" : "no: " + why);
  if (s.flags != 0) fmt::print("  flags: {}\n", FlagNames(s.flags));
  for (const auto& o : s.options) {
    fmt::print("  {}={}  ({}) {}\n", o.name, o.default_value, KindText(o), o.help);
  }
}

// What every strategy takes besides its own options, and the strategies not built here.
void PrintCommonOptions() {
  if (const std::string why = CudaNotBuiltReason(); !why.empty()) {
    fmt::print("\ncuda_pageable, cuda_bounce, cuda_register, cuda_gds (into GPU memory)\n"
               "  not built: {}\n",
               why);
  }
  fmt::print("\nevery strategy also takes these options, for what happens after the load "
             "(mmap:consume=forward:bind=copy):\n");
  for (const auto& o : UseOptionSpecs()) {
    fmt::print("  {}={}  ({}) {}\n", o.name, o.default_value, KindText(o), o.help);
  }
  fmt::print("and {}=TEXT (letters, digits, _ - .), which changes nothing in the load: two "
             "labels of one strategy are two groups of runs, an A/A comparison "
             "(mmap_seq:label=a,mmap_seq:label=b)\n",
             kLabelOption);
}

}  // namespace

int ListCommand(bool json) {
  if (json) {
    Json all = Json::array();
    for (const StrategyInfo* s : Strategies()) all.push_back(StrategyJson(*s));
    fmt::print("{}\n", all.dump(2));
    return 0;
  }
  for (const StrategyInfo* s : Strategies()) PrintStrategy(*s);
  PrintCommonOptions();
  return 0;
}

}  // namespace loadbench::cli
