#include "loaders/loader.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loaders/base/units.h"
#include "loaders/remote/url.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

std::vector<StrategyInfo>& Registry() {
  static std::vector<StrategyInfo> registry;
  return registry;
}

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

int64_t Params::Int(const std::string& name) const { return numbers_.at(name); }

const std::string& Params::Choice(const std::string& name) const { return choices_.at(name); }

nlohmann::json Params::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : numbers_) j[k] = v;
  for (const auto& [k, v] : choices_) j[k] = v;
  return j;
}

double SpanSeconds(const std::vector<TimeSpan>& spans) {
  double s = 0;
  for (const TimeSpan& t : spans) s += std::chrono::duration<double>(t.end - t.begin).count();
  return s;
}

Status Loader::LoadGroups(const std::string& path, const TensorTable&,
                          const std::vector<TensorGroup>&, const GroupUse&) {
  return Status::Unsupported(fmt::format(
      "{}: this strategy loads every tensor at once (Load), not a group at a time", path));
}

std::string CudaNotBuiltReason() {
#ifdef LOADBENCH_CUDA_ABSENT
  return LOADBENCH_CUDA_ABSENT;
#else
  return "";
#endif
}

std::string NotBuiltReason(const std::string& name) {
  if (name.starts_with("cuda_") && !CudaNotBuiltReason().empty()) {
    return fmt::format("strategy '{}' is not built: the CUDA strategies need the CUDA toolkit "
                       "at build time ({})",
                       name, CudaNotBuiltReason());
  }
  return fmt::format("strategy '{}' does not exist in this build", name);
}

Status Loader::LoadToDevice(const std::string& path, const TensorTable&, DeviceLoad*) {
  return Status::Unsupported(
      fmt::format("{}: this strategy loads into host memory (Load), not into a GPU", path));
}

std::string FileKindMismatch(const StrategyInfo& info, const std::string& path) {
  const bool remote = IsRemote(path);
  if ((info.flags & kRemote) && !remote) {
    return fmt::format("{} reads s3:// and http(s):// objects; {} is a local file", info.name,
                       path);
  }
  if (!(info.flags & kRemote) && remote) {
    return fmt::format(
        "{} reads local files; {} is remote: use http_get, http_ranges or http_stream, or mount "
        "the bucket (s3fs) and give the path inside the mount",
        info.name, path);
  }
  return "";
}

bool IsVia(const std::string& v) { return v == "local" || v == "http" || v == "s3" || v == "s3fs"; }

std::string FlagNames(uint32_t flags) {
  static const std::pair<StrategyFlag, const char*> kNames[] = {
      {kEager, "eager"},        {kMapsFile, "maps-file"}, {kAllocates, "allocates"},
      {kDirectIO, "direct-io"}, {kThreads, "threads"},    {kSharedSegment, "shared-segment"},
      {kStreams, "streams"},    {kDevice, "device"},      {kModel, "model"},
      {kRemote, "remote"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

bool RegisterStrategy(StrategyInfo info) {
  Registry().push_back(std::move(info));
  return true;
}

std::vector<const StrategyInfo*> Strategies() {
  std::vector<const StrategyInfo*> out;
  for (const auto& s : Registry()) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

const StrategyInfo* FindStrategy(const std::string& name) {
  for (const auto& s : Registry()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

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
