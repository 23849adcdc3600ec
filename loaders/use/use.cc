#include "loaders/use/use.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "loaders/strategy/registry.h"

namespace loadbench {

const std::vector<OptionSpec>& UseOptionSpecs() {
  using K = OptionSpec::Kind;
  static const std::vector<OptionSpec> specs = {
      {"consume",
       K::kChoice,
       "checksum",
       "what uses the tensors: checksum (read every byte once, in table order), forward (a "
       "first-token proxy: layers in order, a SIMD dot product of every row), random (tensors in "
       "a seeded random order)",
       {"checksum", "forward", "random"}},
      {"bind",
       K::kChoice,
       "view",
       "view: framework tensors point into the loaded bytes; copy: the framework owns per-tensor "
       "buffers and copies into them",
       {"view", "copy"}},
      {"transform",
       K::kChoice,
       "none",
       "convert on load: byteswap (a big-endian file to host order) or bf16_to_f32 (widening)",
       {"none", "byteswap", "bf16_to_f32"}},
      {"place",
       K::kChoice,
       "separate",
       "where a transform writes: separate (new anonymous memory) or inplace (into the loaded "
       "bytes; on a file mapping, copy-on-write private pages)",
       {"separate", "inplace"}},
      {"bind_buffer",
       K::kChoice,
       "malloc",
       "memory for copies and separate transforms: malloc (4 KiB pages) or thp (huge pages)",
       {"malloc", "thp"}},
      {"unaligned",
       K::kChoice,
       "read",
       "forward on a tensor not 64-byte aligned: read it where it lies, or copy it to aligned "
       "memory first",
       {"read", "copy"}},
      {"instances", K::kInt, "1", "model instances in the process, each bound and used", {}, 1, 8},
      {"registry", K::kChoice, "on",
       "on: instances of the same file share one load (reference counted); off: each loads its "
       "own",
       kOnOff},
      {"seed", K::kInt, "1", "the random consumer's order", {}, 0, INT32_MAX},
  };
  return specs;
}

nlohmann::ordered_json UseOptions::ToJson() const {
  return {{"consume", consume},
          {"bind", bind},
          {"transform", transform},
          {"place", place},
          {"bind_buffer", bind_buffer},
          {"unaligned", unaligned},
          {"instances", instances},
          {"registry", registry ? "on" : "off"},
          {"seed", seed}};
}

Status LabelOf(const StrategySpec& spec, std::string* label) {
  const auto it = spec.options.find(kLabelOption);
  label->clear();
  if (it == spec.options.end()) return Status::Ok();
  const std::string& v = it->second;
  const bool good = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  if (!good) {
    return Status::BadInput(fmt::format(
        "{}: label '{}': a label is letters, digits, '_', '-' and '.'", spec.text, it->second));
  }
  *label = it->second;
  return Status::Ok();
}

namespace {

// The use options from their resolved values, and the combinations that cannot be done.
Status UseOptionsOf(const StrategyInfo& info, const Params& u, UseOptions* use) {
  UseOptions o;
  o.consume = u.Choice("consume");
  o.bind = u.Choice("bind");
  o.transform = u.Choice("transform");
  o.place = u.Choice("place");
  o.bind_buffer = u.Choice("bind_buffer");
  o.unaligned = u.Choice("unaligned");
  o.instances = static_cast<int>(u.Int("instances"));
  o.registry = u.On("registry");
  o.seed = u.Int("seed");
  if (o.transform == "bf16_to_f32" && o.place == "inplace") {
    return Status::Unsupported(
        "transform=bf16_to_f32 with place=inplace: widening doubles every tensor, which cannot "
        "be written over its own bytes; use place=separate");
  }
  if ((info.flags & kStreams) && o.instances > 1) {
    return Status::Unsupported(fmt::format(
        "{} holds one layer at a time; several instances cannot share it (use instances=1)",
        info.name));
  }
  if ((info.flags & kDevice) && o.ToJson() != UseOptions().ToJson()) {
    return Status::Unsupported(fmt::format(
        "{} delivers into GPU memory and checks the bytes there; the use options (consume, "
        "bind, transform, instances, ...) act on host memory and must keep their defaults",
        info.name));
  }
  *use = std::move(o);
  return Status::Ok();
}

}  // namespace

Status ResolveSpec(const StrategyInfo& info, const StrategySpec& spec, Params* params,
                   UseOptions* use) {
  std::string label;
  LB_RETURN_IF_ERROR(LabelOf(spec, &label));
  std::map<std::string, std::string> own, common;
  for (const auto& [k, v] : spec.options) {
    if (k == kLabelOption) continue;
    bool is_use = false;
    for (const OptionSpec& o : UseOptionSpecs()) is_use = is_use || o.name == k;
    (is_use ? common : own)[k] = v;
  }
  Status s = Params::Resolve(info.name, info.options, own, params);
  if (!s.ok() && s.code() == Status::Code::kBadInput &&
      s.message().find("unknown option") != std::string::npos) {
    std::string names;
    for (const OptionSpec& o : UseOptionSpecs()) names += (names.empty() ? "" : ", ") + o.name;
    return Status::BadInput(
        fmt::format("{}; every strategy also takes {} and {}", s.message(), names, kLabelOption));
  }
  LB_RETURN_IF_ERROR(s);
  Params u;
  LB_RETURN_IF_ERROR(Params::Resolve(info.name, UseOptionSpecs(), common, &u));
  return UseOptionsOf(info, u, use);
}

Status ResolveSpec(const StrategySpec& spec, ResolvedSpec* out) {
  ResolvedSpec r;
  r.info = FindStrategy(spec.name);
  if (r.info == nullptr) {
    return Status::BadInput(fmt::format("unknown strategy '{}'", spec.name));
  }
  LB_RETURN_IF_ERROR(ResolveSpec(*r.info, spec, &r.params, &r.use));
  *out = std::move(r);
  return Status::Ok();
}

nlohmann::ordered_json ResolvedJson(const ResolvedSpec& r) {
  if (r.info == nullptr) return nullptr;
  return {{"name", r.info->name}, {"params", r.params.ToJson()}, {"use", r.use.ToJson()}};
}

Status ResolvedOf(const nlohmann::ordered_json& j, ResolvedSpec* out) {
  ResolvedSpec r;
  if (j.is_null()) {
    *out = std::move(r);
    return Status::Ok();
  }
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) {
    return Status::BadInput("strategy: no name");
  }
  const std::string name = j["name"].get<std::string>();
  r.info = FindStrategy(name);
  if (r.info == nullptr) return Status::BadInput(fmt::format("unknown strategy '{}'", name));
  const nlohmann::json params = j.value("params", nlohmann::ordered_json());
  const nlohmann::json use = j.value("use", nlohmann::ordered_json());
  LB_RETURN_IF_ERROR(Params::FromJson(name, r.info->options, params, &r.params));
  Params u;
  LB_RETURN_IF_ERROR(Params::FromJson(name, UseOptionSpecs(), use, &u));
  LB_RETURN_IF_ERROR(UseOptionsOf(*r.info, u, &r.use));
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace loadbench
