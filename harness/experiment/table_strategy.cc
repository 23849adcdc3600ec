// [[strategy]]: a strategy and its options; an option given a list is an axis of a grid, and
// the table stands for every point of the grid. An exec command's table is read by ReadExec;
// a fleet point with one of the engine's designs is made a command (FleetEnginePoint).
#include <algorithm>
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

// name = "fleet:design=every", the spec `run --strategies` takes: *name becomes the strategy's
// name, and each option in it an axis of one value, as if it were a key of the table. An option
// given in the name and as a key must say the same; a piece that is not key=value is refused
// with the form of a key of its own.
Status NameOptions(const TableReader& r, const toml::table& t, std::string* name, Axes* axes) {
  const size_t colon = name->find(':');
  if (colon == std::string::npos) return Status::Ok();
  const std::string spec = *name;
  *name = spec.substr(0, colon);
  for (size_t at = colon; at != std::string::npos;) {
    const size_t next = spec.find(':', at + 1);
    const std::string kv =
        spec.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    at = next;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      return r.Bad(*t.get("name"),
                   fmt::format("name \"{}\": '{}' is not key=value; an option may also be a key "
                               "of its own: name = \"{}\" and {} = VALUE on lines of their own",
                               spec, kv, *name, kv.substr(0, eq)));
    }
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    auto given = std::find_if(axes->begin(), axes->end(),
                              [&](const auto& axis) { return axis.first == key; });
    if (given == axes->end()) {
      axes->emplace_back(key, std::vector<std::string>{value});
    } else if (given->second != std::vector<std::string>{value}) {
      const toml::node* as_key = t.get(key);
      return r.Bad(as_key != nullptr ? *as_key : *t.get("name"),
                   fmt::format("option {} is given twice, differently: {} in name \"{}\" and {}; "
                               "give it once",
                               key, value, spec,
                               as_key != nullptr
                                   ? fmt::format("{} = {}", key, fmt::join(given->second, ", "))
                                   : fmt::format("{} earlier in the name", given->second[0])));
    }
  }
  return Status::Ok();
}

// The options of a [[strategy]] table as axes, and its name (a spec in it read as such).
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
  return NameOptions(r, t, name, axes);
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
    if (!IsVia(v->second)) {
      const toml::node* at = t.get("via") != nullptr ? t.get("via") : t.get("name");  // or in name
      return r.Bad(*at, TableReader::ViaError(v->second));
    }
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

// A point of fleet's grid with one of the engine's designs, made its command; refused at the
// option's line as a strategy's point is, and where its row's label is another point's.
Status EnginePoint(const TableReader& r, const toml::table& t, const Axes& axes,
                   const std::vector<ExperimentStrategy>& out, ExperimentStrategy* s) {
  std::vector<std::string> varying;
  for (const auto& [option, values] : axes) {
    if (values.size() > 1) varying.push_back(option);
  }
  const std::string written = s->spec.text;
  const Status st = FleetEnginePoint(r.server, varying, s);
  if (!st.ok()) return r.Bad(OptionNamed(t, st.message()), st.message());
  for (const ExperimentStrategy& other : out) {
    if (other.spec.text != s->spec.text) continue;
    return r.Bad(t, fmt::format("{}: its row {} is another point's; in an experiment, give the "
                                "values that differ as one list in one [[strategy]] table, and "
                                "its rows are named by them ({}-chunk1MiB)",
                                written, s->exec->label, s->exec->label));
  }
  return Status::Ok();
}

}  // namespace

Status ReadStrategy(const TableReader& r, const toml::table& t,
                    std::vector<ExperimentStrategy>* out) {
  if (t["name"].value<std::string>() == kExec) return ReadExec(r, t, out);
  if (t["name"].value<std::string>().value_or("").starts_with(std::string(kExec) + ":")) {
    return r.Bad(*t.get("name"), "an exec strategy is name = \"exec\" with label, command and "
                                 "its other keys of their own (docs/exec.md)");
  }
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
    if (IsFleetEngine(s.spec)) {
      LB_RETURN_IF_ERROR(EnginePoint(r, t, axes, *out, &s));
    } else {
      LB_RETURN_IF_ERROR(Point(r, t, info, &s));
    }
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace loadbench
