#include "loaders/use/spec.h"

#include <fmt/format.h>

#include "loaders/strategy/registry.h"
#include "loaders/use/use.h"

namespace loadbench {

bool IsVia(const std::string& v) { return v == "local" || v == "http" || v == "s3" || v == "s3fs"; }

Status ParseStrategyList(const std::string& text, std::vector<StrategySpec>* out) {
  std::vector<StrategySpec> specs;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item == "all") {
      for (const StrategyInfo* info : Strategies()) specs.push_back({info->name, {}, info->name});
      continue;
    }
    StrategySpec spec;
    spec.text = item;
    size_t colon = item.find(':');
    spec.name = item.substr(0, colon);
    if (spec.name.empty()) {
      return Status::BadInput(fmt::format("--strategies: empty strategy name in '{}'", text));
    }
    const StrategyInfo* info = FindStrategy(spec.name);
    if (info == nullptr) {
      std::string known;
      for (const auto* s : Strategies()) known += (known.empty() ? "" : ", ") + s->name;
      if (!CudaNotBuiltReason().empty() && spec.name.starts_with("cuda_")) {
        return Status::BadInput("--strategies: " + NotBuiltReason(spec.name));
      }
      return Status::BadInput(
          fmt::format("--strategies: unknown strategy '{}' (known: {})", spec.name, known));
    }
    while (colon != std::string::npos) {
      size_t next = item.find(':', colon + 1);
      std::string kv =
          item.substr(colon + 1, next == std::string::npos ? std::string::npos : next - colon - 1);
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
        return Status::BadInput(
            fmt::format("--strategies: '{}': option '{}' is not key=value", item, kv));
      }
      const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
      if (key == "via" && !IsVia(value)) {
        return Status::BadInput(fmt::format(
            "--strategies: '{}': via={} (it takes local, http, s3 or s3fs)", item, value));
      }
      if (key == "via") {
        spec.via = value == "local" ? "" : value;
      } else {
        spec.options[key] = value;
      }
      colon = next;
    }
    Params ignored;
    UseOptions ignored_use;
    // A combination that cannot work (an in-place widening) is a run recorded unsupported
    // with its reason, not bad usage.
    Status s = ResolveSpec(*info, spec, &ignored, &ignored_use);
    if (!s.ok() && s.code() != Status::Code::kUnsupported) return s;
    specs.push_back(std::move(spec));
  }
  *out = std::move(specs);
  return Status::Ok();
}

}  // namespace loadbench
