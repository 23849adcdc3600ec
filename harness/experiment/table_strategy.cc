// [[strategy]]: a strategy and its options; an option given a list is an axis of a grid, and
// the table stands for every point of the grid. An exec command's table is read by ReadExec.
#include <map>

#include <fmt/ranges.h>

#include "harness/experiment/tables.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

// Option name to its values: one for a scalar, several for a grid axis.
using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

// An option value as a user writes it on the command line: "4", "1MiB", "on".
std::optional<std::string> OptionText(const toml::node& n) {
  if (auto s = n.value<std::string>()) return *s;
  if (n.is_integer()) return std::to_string(*n.value<int64_t>());
  if (auto b = n.value<bool>()) return *b ? "on" : "off";
  return std::nullopt;
}

// The options of a [[strategy]] table as axes, and its name.
Status AxesOf(const TableReader& r, const toml::table& t, std::string* name, Axes* axes) {
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (k == "name") {
      LB_RETURN_IF_ERROR(r.String(node, "name", name));
      continue;
    }
    std::vector<std::string> values;
    auto add = [&](const toml::node& v) {
      auto text = OptionText(v);
      if (!text) {
        return r.Bad(v, fmt::format("option {}: a value must be a string, integer or boolean", k));
      }
      values.push_back(*text);
      return Status::Ok();
    };
    if (const toml::array* a = node.as_array()) {
      for (const toml::node& v : *a) LB_RETURN_IF_ERROR(add(v));
      if (values.empty()) return r.Bad(node, fmt::format("option {}: empty list", k));
    } else {
      LB_RETURN_IF_ERROR(add(node));
    }
    axes->emplace_back(k, std::move(values));
  }
  return Status::Ok();
}

// Every combination of the axes, the first axis varying slowest.
std::vector<std::map<std::string, std::string>> Grid(const Axes& axes) {
  std::vector<std::map<std::string, std::string>> points = {{}};
  for (const auto& [option, values] : axes) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& p : points) {
      for (const auto& v : values) {
        auto q = p;
        q[option] = v;
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  return points;
}

// The option of `t` that a message of ResolveSpec's names ("option chunk: ...", "unknown
// option 'chunck'"), else the table itself.
const toml::node& OptionNamed(const toml::table& t, const std::string& message) {
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (message.find("option " + k + ":") != std::string::npos ||
        message.find("option '" + k + "'") != std::string::npos) {
      return node;
    }
  }
  return t;
}

// One point of a [[strategy]] table checked as `run --strategies` checks it: an option the
// strategy does not take, or a value it cannot parse, is refused at the option's line; a
// combination that cannot work here (or a strategy not built: the CUDA ones without the
// toolkit) is a point recorded unsupported with its reason.
Status Point(const TableReader& r, const toml::table& t, const StrategyInfo* info,
             ExperimentStrategy* s) {
  if (auto v = s->spec.options.find("via"); v != s->spec.options.end()) {
    if (!IsVia(v->second)) return r.Bad(*t.get("via"), TableReader::ViaError(v->second));
    s->spec.via = v->second == "local" ? "" : v->second;
    s->spec.options.erase(v);
  }
  if (info == nullptr) {
    s->unsupported = NotBuiltReason(s->spec.name);
    return Status::Ok();
  }
  // Resolved here, once: every run of the plan carries it, and its worker is told it.
  const Status st = ResolveSpec(s->spec, &s->resolved);
  if (st.code() == Status::Code::kBadInput)
    return r.Bad(OptionNamed(t, st.message()), st.message());
  if (!st.ok()) s->unsupported = st.message(), s->resolved = ResolvedSpec();
  return Status::Ok();
}

}  // namespace

Status ReadStrategy(const TableReader& r, const toml::table& t,
                    std::vector<ExperimentStrategy>* out) {
  if (t["name"].value<std::string>() == kExec) return ReadExec(r, t, out);
  std::string name;
  Axes axes;
  LB_RETURN_IF_ERROR(AxesOf(r, t, &name, &axes));
  if (name.empty()) return r.Bad(t, "[[strategy]] has no name");
  const StrategyInfo* info = FindStrategy(name);
  if (info == nullptr && (CudaNotBuiltReason().empty() || !name.starts_with("cuda_"))) {
    std::vector<std::string> known;
    for (const StrategyInfo* s : Strategies()) known.push_back(s->name);
    return r.Bad(*t.get("name"),
                 fmt::format("unknown strategy '{}' (known: {})", name, fmt::join(known, ", ")));
  }
  // A point from the command line keeps its text as written there (run_command.cc).
  const auto written = r.source().written.find(&t);
  for (auto& options : Grid(axes)) {
    ExperimentStrategy s;
    s.spec.name = name;
    s.spec.text = name;
    for (const auto& [k, v] : options) s.spec.text += ":" + k + "=" + v;
    if (written != r.source().written.end()) s.spec.text = written->second;
    s.spec.options = std::move(options);
    LB_RETURN_IF_ERROR(Point(r, t, info, &s));
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace loadbench
