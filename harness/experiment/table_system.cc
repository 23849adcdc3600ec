// [system]: the machine's state for the runs (harness/machine/tuning.h).
#include "harness/experiment/tables.h"

namespace loadbench {

// tune = true|false|"auto", page_reporting = "off"|"keep" (only with tune), settle = true|false.
Status ReadSystem(const TableReader& r, const toml::node& n, ExperimentSystem* out) {
  const toml::table* t = n.as_table();
  if (t == nullptr) return r.Bad(n, "system must be a table: [system]");
  const toml::node* page_reporting = nullptr;
  for (const auto& [key, node] : *t) {
    const std::string k(key.str());
    if (k == "tune") {
      const std::optional<bool> v = node.value<bool>();
      const std::optional<std::string> text = node.value<std::string>();
      out->tune_auto = text == "auto";
      if (!v && !out->tune_auto) return r.Bad(node, "system.tune must be true, false or \"auto\"");
      out->tune = v.value_or(true);
    } else if (k == "settle") {
      const std::optional<bool> v = node.value<bool>();
      if (!v) return r.Bad(node, "system.settle must be true or false");
      out->settle = *v;
    } else if (k == "page_reporting") {
      std::string text;
      LB_RETURN_IF_ERROR(r.String(node, "system.page_reporting", &text));
      Status s = ParsePageReportingChoice(text, "system.page_reporting", &out->page_reporting);
      if (!s.ok()) return r.Bad(node, s.message());
      page_reporting = &node;
    } else {
      return r.Bad(
          node,
          fmt::format("[system]: unknown key '{}' (it takes tune, page_reporting and settle)", k));
    }
  }
  if (page_reporting != nullptr && !out->tune) {
    return r.Bad(*page_reporting, "system.page_reporting says how to tune: it needs tune = true");
  }
  return Status::Ok();
}

}  // namespace loadbench
