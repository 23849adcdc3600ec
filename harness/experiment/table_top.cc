// The top level of an experiment: how rounds are run and compared (reps, auto_*, baseline,
// ceiling, seed, order), what each run is (name, timeout_s, profile, profile_hz), the conditions
// of the plan (cache, procs, pattern, memory_limit), and its tables, each given to its reader.
// Once all are read, the checks that need more than one table.
#include <algorithm>
#include <filesystem>

#include <fmt/ranges.h>

#include "harness/experiment/tables.h"
#include "loaders/use/part.h"

namespace loadbench {
namespace {

// auto_target, auto_min_rounds, auto_max_rounds, auto_budget.
Status AutoKey(TableReader& r, const std::string& k, const toml::node& node, AutoReps* a,
               bool* known) {
  if (k == "auto_target") {
    const std::optional<double> v = node.value<double>();
    if (!v) return r.Bad(node, "auto_target must be a number such as 0.1");
    a->target = *v;
  } else if (k == "auto_min_rounds" || k == "auto_max_rounds") {
    int64_t v = 0;
    LB_RETURN_IF_ERROR(r.Integer(node, k.c_str(), 1, 10000, &v));
    (k == "auto_min_rounds" ? a->min_rounds : a->max_rounds) = static_cast<int>(v);
  } else if (k == "auto_budget") {
    std::string text;
    if (node.is_integer() || node.is_floating_point()) {
      text = fmt::format("{}", *node.value<double>());
    } else {
      LB_RETURN_IF_ERROR(r.String(node, "auto_budget", &text));
    }
    Status s = ParseDuration(text, "auto_budget", &a->budget_s);
    if (!s.ok()) return r.Bad(node, s.message());
  } else {
    *known = false;
    return Status::Ok();
  }
  r.auto_where = &node;
  return Status::Ok();
}

// The keys of how rounds are run and compared: reps, auto_*, baseline, ceiling, seed, order.
Status RoundsKey(TableReader& r, const std::string& k, const toml::node& node, Experiment* e,
                 bool* known) {
  *known = true;
  if (k == "reps") {
    if (node.value<std::string>() == "auto") {
      e->auto_reps = true;
      return Status::Ok();
    }
    if (!node.is_integer()) return r.Bad(node, "reps must be an integer or \"auto\"");
    int64_t v = 0;
    LB_RETURN_IF_ERROR(r.Integer(node, "reps", 1, 100000, &v));
    e->reps = static_cast<int>(v);
  } else if (k.starts_with("auto_")) {
    return AutoKey(r, k, node, &e->autoreps, known);
  } else if (k == "baseline") {
    LB_RETURN_IF_ERROR(r.String(node, "baseline", &e->baseline));
    r.baseline_where = &node;
  } else if (k == "ceiling") {
    const std::optional<bool> v = node.value<bool>();
    if (!v) return r.Bad(node, "ceiling must be true or false");
    e->ceiling = *v;
  } else if (k == "seed") {
    int64_t v = 0;
    LB_RETURN_IF_ERROR(r.Integer(node, "seed", 0, INT64_MAX, &v));
    e->seed = static_cast<uint64_t>(v);
  } else if (k == "order") {
    std::string order;
    LB_RETURN_IF_ERROR(r.String(node, "order", &order));
    Status s = ParseRoundOrder(order, &e->order);
    if (!s.ok()) return r.Bad(node, s.message());
    r.order_where = &node;
  } else {
    *known = false;
  }
  return Status::Ok();
}

// The keys of what each run is: name, timeout_s, profile, profile_hz.
Status RunKey(TableReader& r, const std::string& k, const toml::node& node, Experiment* e,
              bool* known) {
  *known = true;
  if (k == "name") return r.String(node, "name", &e->name);
  if (k == "timeout_s") {
    const std::optional<double> v = node.value<double>();  // an integer converts too
    if (!v || !(*v >= 0 && *v <= 7 * 24 * 3600)) {
      return r.Bad(node, "timeout_s must be a number of seconds, 0 to 604800");
    }
    e->timeout_s = *v;
    return Status::Ok();
  }
  if (k == "profile") {
    const std::optional<bool> v = node.value<bool>();
    if (!v) return r.Bad(node, "profile must be true or false");
    e->profile = *v;
    return Status::Ok();
  }
  if (k == "profile_hz") {
    int64_t v = 0;
    LB_RETURN_IF_ERROR(r.Integer(node, "profile_hz", 1, kMaxProfileHz, &v));
    e->profile_hz = static_cast<int>(v);
    return Status::Ok();
  }
  *known = false;
  return Status::Ok();
}

// cache = "cold", "warm", "both", or a list of them.
Status Caches(const TableReader& r, const toml::node& n, std::vector<std::string>* out) {
  std::vector<std::string> caches;
  auto add = [&](const toml::node& c) {
    auto v = c.value<std::string>();
    if (!v || (*v != "cold" && *v != "warm" && *v != "both")) {
      return r.Bad(c, "cache must be \"cold\", \"warm\" or \"both\"");
    }
    if (*v == "both") {
      caches.insert(caches.end(), {"cold", "warm"});
    } else {
      caches.push_back(*v);
    }
    return Status::Ok();
  };
  if (const toml::array* a = n.as_array()) {
    for (const toml::node& c : *a) LB_RETURN_IF_ERROR(add(c));
  } else {
    LB_RETURN_IF_ERROR(add(n));
  }
  if (caches.empty()) return r.Bad(n, "cache is an empty list");
  *out = std::move(caches);
  return Status::Ok();
}

// The keys of the plan's conditions: cache, pattern, procs, memory_limit.
Status ConditionKey(TableReader& r, const std::string& k, const toml::node& node, Experiment* e,
                    bool* known) {
  *known = true;
  if (k == "cache") return Caches(r, node, &e->caches);
  if (k == "pattern") {
    e->patterns.clear();
    return r.Each(node, "pattern", [&](const toml::node& v) {
      ReadPattern p;
      const std::optional<std::string> text = v.value<std::string>();
      if (!text) return r.Bad(v, "pattern must be a word or a list of words");
      if (Status s = ParsePattern(*text, &p); !s.ok()) return r.Bad(v, s.message());
      e->patterns.push_back(p);
      return Status::Ok();
    });
  }
  if (k == "procs") {
    e->procs.clear();
    e->procs_given = true;
    return r.Each(node, "procs", [&](const toml::node& v) {
      int64_t n = 0;
      LB_RETURN_IF_ERROR(r.Integer(v, "procs", 1, 64, &n));
      e->procs.push_back(static_cast<int>(n));
      return Status::Ok();
    });
  }
  if (k == "memory_limit") {
    e->memory_limits.clear();
    return r.Each(node, "memory_limit", [&](const toml::node& v) {
      uint64_t bytes = 0;
      LB_RETURN_IF_ERROR(r.Bytes(v, "memory_limit", /*none_ok=*/true, &bytes));
      e->memory_limits.push_back(bytes);
      return Status::Ok();
    });
  }
  *known = false;
  return Status::Ok();
}

// The tables, each given to its reader: [system], [server], [link], [cluster], [[file]],
// [[strategy]], [[storage]].
Status TableKey(TableReader& r, const std::string& k, const toml::node& node, Experiment* e,
                bool* known) {
  *known = true;
  if (k == "system") return ReadSystem(r, node, &e->system);
  if (k == "server") return ReadServer(r, node, &e->server);
  if (k == "link") {
    r.link_where = &node;
    return ReadLink(r, node, &e->link);
  }
  if (k == "cluster") {
    r.cluster_where = &node;
    return ReadCluster(r, node, &e->cluster);
  }
  if (k == "file") {
    return r.Tables(node, "file", [&](const toml::table& t) { return ReadFile(r, t, &e->files); });
  }
  if (k == "strategy") {
    return r.Tables(node, "strategy",
                    [&](const toml::table& t) { return ReadStrategy(r, t, &e->strategies); });
  }
  if (k == "storage") {
    r.storage_where = &node;
    return r.Tables(node, "storage",
                    [&](const toml::table& t) { return ReadStorage(r, t, &e->storages); });
  }
  *known = false;
  return Status::Ok();
}

}  // namespace

Status ReadTop(TableReader& r, const toml::table& top, Experiment* e) {
  // [server] first, whatever the keys' order: the engine's fleet designs in [[strategy]] reach
  // the model through it.
  if (const toml::node* server = top.get("server")) {
    LB_RETURN_IF_ERROR(ReadServer(r, *server, &e->server));
  }
  r.server = &e->server;
  for (const auto& [key, node] : top) {
    const std::string k(key.str());
    if (k == "server") continue;
    bool known = false;
    LB_RETURN_IF_ERROR(RoundsKey(r, k, node, e, &known));
    if (!known) LB_RETURN_IF_ERROR(RunKey(r, k, node, e, &known));
    if (!known) LB_RETURN_IF_ERROR(ConditionKey(r, k, node, e, &known));
    if (!known) LB_RETURN_IF_ERROR(TableKey(r, k, node, e, &known));
    if (!known) return r.Bad(node, fmt::format("unknown key '{}'", k));
  }
  return Status::Ok();
}

// What can only be checked once every key is read: the defaults, the baseline, auto reps.
Status FinishTop(TableReader& r, const toml::table& top, Experiment* e) {
  if (e->name.empty()) e->name = std::filesystem::path(r.source().path).stem().string();
  if (e->files.empty()) return r.BadSource("no [[file]]");
  if (e->strategies.empty()) return r.BadSource("no [[strategy]]");
  std::vector<std::string> specs;
  for (const ExperimentStrategy& st : e->strategies) specs.push_back(st.spec.text);
  if (e->baseline.empty()) {
    e->baseline = DefaultBaseline(specs);
  } else if (std::find(specs.begin(), specs.end(), e->baseline) == specs.end()) {
    return r.Bad(*r.baseline_where,
                 fmt::format("baseline '{}' is not one of the strategy points ({})", e->baseline,
                             fmt::join(specs, ", ")));
  }
  if (!e->link.rates.empty() && e->server.kind.empty()) {
    return r.Bad(*r.link_where,
                 "a [link] is between the readers and the experiment's server: it needs "
                 "[server] kind = \"http\" or \"s3\"");
  }
  if (e->cluster.on()) LB_RETURN_IF_ERROR(CheckCluster(r, e));
  if (!e->storages.empty()) LB_RETURN_IF_ERROR(CheckStorages(r, *r.storage_where, *e));
  if (Status s = CheckGroupedOrder(*e); !s.ok()) return r.Bad(*r.order_where, s.message());
  if (Status s = CheckEnginePatterns(*e); !s.ok()) return r.BadSource(s.message());
  if (r.auto_where != nullptr && !e->auto_reps) {
    return r.Bad(*r.auto_where, "auto_* keys need reps = \"auto\"");
  }
  if (!e->auto_reps) return Status::Ok();
  if (Status s = CheckAutoReps(e->autoreps); !s.ok()) {
    return r.Bad(r.auto_where ? *r.auto_where : top, s.message());
  }
  if (e->order == RoundOrder::kGrouped) {
    return r.Bad(*r.order_where, "reps = \"auto\" compares within rounds: order "
                                 "must be interleaved or shuffled, not grouped");
  }
  e->reps = e->autoreps.max_rounds;
  return Status::Ok();
}

}  // namespace loadbench
