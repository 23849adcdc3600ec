// [[storage]]: the storages the model is put on (harness/storage/storage.h), each table one value
// of the axis: kind, its options, a device class and a label. `run --storage` gives the same
// tables.
#include <algorithm>

#include <fmt/ranges.h>

#include "harness/experiment/tables.h"

namespace loadbench {
namespace {

// A value as SetStorageOption takes it: a string as written, an integer in decimal.
Status OptionText(const TableReader& r, const std::string& key, const toml::node& n,
                  std::string* out) {
  if (n.is_integer()) {
    *out = std::to_string(*n.value<int64_t>());
    return Status::Ok();
  }
  return r.String(n, ("storage." + key).c_str(), out);
}

// Where a table was written, for the messages of checks made later (the executor's).
std::string WhereOf(const TableReader& r, const toml::table& t, size_t index) {
  if (r.source().path.empty()) return "--storage";
  return fmt::format("{}:{}: [[storage]] {}", r.source().path, t.source().begin.line, index + 1);
}

}  // namespace

Status ReadStorage(const TableReader& r, const toml::table& t,
                   std::vector<ExperimentStorage>* out) {
  ExperimentStorage st;
  st.where = WhereOf(r, t, out->size());
  const toml::node* kind = t.get("kind");
  if (kind == nullptr) {
    return r.Bad(t, fmt::format("[[storage]] needs kind = one of: {}",
                                fmt::join(StorageKinds(), ", ")));
  }
  LB_RETURN_IF_ERROR(r.String(*kind, "storage.kind", &st.spec.kind));
  const auto& kinds = StorageKinds();
  if (std::find(kinds.begin(), kinds.end(), st.spec.kind) == kinds.end()) {
    return r.Bad(*kind, fmt::format("storage.kind = \"{}\": it is one of {}", st.spec.kind,
                                    fmt::join(kinds, ", ")));
  }
  // A preset first, so that read_bps and read_iops override it whatever the table's order.
  std::vector<std::pair<std::string, const toml::node*>> keys;
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (k == "kind") continue;
    if (k == "probe") {  // the run's, not the storage's: no part of its label
      const std::optional<bool> v = node.value<bool>();
      if (!v) return r.Bad(node, "storage.probe must be true or false");
      st.probe = *v;
      continue;
    }
    if (k == "preset") {
      keys.insert(keys.begin(), {k, &node});
    } else {
      keys.push_back({k, &node});
    }
  }
  for (const auto& [k, node] : keys) {
    std::string value;
    LB_RETURN_IF_ERROR(OptionText(r, k, *node, &value));
    if (Status s = SetStorageOption(k, value, &st.spec); !s.ok()) return r.Bad(*node, s.message());
  }
  if (st.spec.label.empty()) st.spec.label = LabelOf(st.spec);
  for (const ExperimentStorage& other : *out) {
    if (other.spec.label == st.spec.label) {
      return r.Bad(t, fmt::format("two [[storage]] tables are labelled '{}': give each its own "
                                  "label",
                                  st.spec.label));
    }
  }
  out->push_back(std::move(st));
  return Status::Ok();
}

// Storages with what they cannot go with: a [cluster] (its nodes read from the store over the
// network), a [server] or [link] other than a fuse storage's, and automatic rounds over more
// than one storage (each storage's rounds come one after another).
Status CheckStorages(const TableReader& r, const toml::node& where, const Experiment& e) {
  bool fuse = false;
  for (const ExperimentStorage& st : e.storages) fuse = fuse || st.spec.kind == "fuse";
  if (e.cluster.on()) {
    return r.Bad(where, "[[storage]] and [cluster] do not go together: a cluster's nodes read "
                        "from the store over the network");
  }
  if (fuse && e.server.kind.empty()) {
    return r.Bad(where, "a fuse storage mounts the experiment's server: it needs [server] kind = "
                        "\"http\" or \"s3\"");
  }
  if (!e.link.rates.empty()) {
    return r.Bad(where, "[[storage]] and [link] do not go together: a link shapes the way to "
                        "the server, a storage is where the model sits");
  }
  if (e.auto_reps && e.storages.size() > 1) {
    return r.Bad(where, "reps = \"auto\" with several storages: each storage's rounds come one "
                        "after another; give reps a number");
  }
  return Status::Ok();
}

}  // namespace loadbench
