// [[strategy]] name = "exec": any command, measured like a worker (docs/exec.md): label,
// command, shell, package, timed and via; no grid.
#include "harness/experiment/tables.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

// An exec command: a list of strings, or with shell = true one string.
Status ExecArgv(const TableReader& r, const toml::node& n, bool shell,
                std::vector<std::string>* argv) {
  if (shell) {
    const std::optional<std::string> v = n.value<std::string>();
    if (!v || v->empty()) return r.Bad(n, "exec: with shell = true, command is one string");
    *argv = {*v};
    return Status::Ok();
  }
  const toml::array* a = n.as_array();
  if (a == nullptr || a->empty()) {
    return r.Bad(n, "exec: command is a list of strings, [\"prog\", \"arg\"] (one string "
                    "for /bin/sh only with shell = true)");
  }
  for (const toml::node& v : *a) {
    const std::optional<std::string> text = v.value<std::string>();
    if (!text) return r.Bad(v, "exec: every word of command is a string");
    argv->push_back(*text);
  }
  if (argv->front().empty()) return r.Bad(n, "exec: the program is empty");
  return Status::Ok();
}

// The keys of an exec table into `c`, but its command, which needs shell: `command`.
Status ExecKeys(const TableReader& r, const toml::table& t, ExecCommand* c, std::string* via,
                const toml::node** command) {
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (k == "label") {
      LB_RETURN_IF_ERROR(r.String(node, "label", &c->label));
    } else if (k == "package") {
      LB_RETURN_IF_ERROR(r.String(node, "package", &c->package));
    } else if (k == "shell") {
      const std::optional<bool> v = node.value<bool>();
      if (!v) return r.Bad(node, "exec: shell must be true or false");
      c->shell = *v;
    } else if (k == "command") {
      *command = &node;
    } else if (k == "timed") {
      const std::optional<std::string> v = node.value<std::string>();
      if (!v || (*v != kTimedCommand && *v != kTimedRegion)) {
        return r.Bad(node, "exec: timed must be \"command\" or \"region\"");
      }
      c->timed = *v;
    } else if (k == "via") {
      LB_RETURN_IF_ERROR(r.Via(node, via));
    } else if (k != "name") {
      return r.Bad(node, fmt::format("exec: unknown key '{}' (exec takes label, command, shell, "
                                     "package, timed and via)",
                                     k));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ReadExec(const TableReader& r, const toml::table& t, std::vector<ExperimentStrategy>* out) {
  ExecCommand c;
  std::string via;
  const toml::node* command = nullptr;
  LB_RETURN_IF_ERROR(ExecKeys(r, t, &c, &via, &command));
  if (c.label.empty()) return r.Bad(t, "exec: a label is required");
  if (command == nullptr) return r.Bad(t, "exec: a command is required");
  LB_RETURN_IF_ERROR(ExecArgv(r, *command, c.shell, &c.argv));
  ExperimentStrategy s;
  s.spec = ExecSpec(c.label);
  s.spec.via = via;
  if (Status l = LabelOf(s.spec, &c.label); !l.ok()) return r.Bad(t, l.message());
  for (const ExperimentStrategy& other : *out) {
    if (other.spec.text == s.spec.text) {
      return r.Bad(t, fmt::format("exec: label '{}' is used twice", c.label));
    }
  }
  s.exec = std::move(c);
  out->push_back(std::move(s));
  return Status::Ok();
}

}  // namespace loadbench
