#include "harness/experiment/experiment.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "harness/net/cluster.h"
#include "harness/net/link.h"
#include "loaders/base/proc_fields.h"
#include "loaders/base/units.h"
#include "loaders/use/part.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

// "PATH:LINE: what", the one-line message of a malformed experiment.
Status BadAt(const std::string& path, const toml::source_region& where, const std::string& what) {
  return Status::BadInput(fmt::format("{}:{}: {}", path, where.begin.line, what));
}

// An option value as a user writes it on the command line: "4", "1MiB", "on".
std::optional<std::string> OptionText(const toml::node& n) {
  if (auto s = n.value<std::string>()) return *s;
  if (n.is_integer()) return std::to_string(*n.value<int64_t>());
  if (auto b = n.value<bool>()) return *b ? "on" : "off";
  return std::nullopt;
}

class Reader {
 public:
  Reader(const std::string& path, const std::string& data_dir) : path_(path), data_(data_dir) {}

  Status Read(const toml::table& top, Experiment* e) {
    for (const auto& [key, node] : top) {
      const std::string k(key.str());
      bool known = false;
      LB_RETURN_IF_ERROR(RoundsKey(k, node, e, &known));
      if (!known) LB_RETURN_IF_ERROR(PlanKey(k, node, e, &known));
      if (!known) return BadAt(path_, node.source(), fmt::format("unknown key '{}'", k));
    }
    return Finish(top, e);
  }

 private:
  // The keys of how rounds are run and compared: reps, auto_*, baseline, ceiling, seed, order.
  Status RoundsKey(const std::string& k, const toml::node& node, Experiment* e, bool* known) {
    *known = true;
    if (k == "reps") {
      if (node.value<std::string>() == "auto") {
        e->auto_reps = true;
        return Status::Ok();
      }
      if (!node.is_integer()) {
        return BadAt(path_, node.source(), "reps must be an integer or \"auto\"");
      }
      int64_t v = 0;
      LB_RETURN_IF_ERROR(Integer(node, "reps", 1, 100000, &v));
      e->reps = static_cast<int>(v);
    } else if (k.starts_with("auto_")) {
      return AutoKey(k, node, &e->autoreps, known);
    } else if (k == "baseline") {
      LB_RETURN_IF_ERROR(String(node, "baseline", &e->baseline));
      baseline_where_ = &node.source();
    } else if (k == "ceiling") {
      const std::optional<bool> v = node.value<bool>();
      if (!v) return BadAt(path_, node.source(), "ceiling must be true or false");
      e->ceiling = *v;
    } else if (k == "seed") {
      int64_t v = 0;
      LB_RETURN_IF_ERROR(Integer(node, "seed", 0, INT64_MAX, &v));
      e->seed = static_cast<uint64_t>(v);
    } else if (k == "order") {
      std::string order;
      LB_RETURN_IF_ERROR(String(node, "order", &order));
      Status s = ParseRoundOrder(order, &e->order);
      if (!s.ok()) return BadAt(path_, node.source(), s.message());
      order_where_ = &node.source();
    } else {
      *known = false;
    }
    return Status::Ok();
  }

  // auto_target, auto_min_rounds, auto_max_rounds, auto_budget.
  Status AutoKey(const std::string& k, const toml::node& node, AutoReps* a, bool* known) {
    if (k == "auto_target") {
      const std::optional<double> v = node.value<double>();
      if (!v) return BadAt(path_, node.source(), "auto_target must be a number such as 0.1");
      a->target = *v;
    } else if (k == "auto_min_rounds" || k == "auto_max_rounds") {
      int64_t v = 0;
      LB_RETURN_IF_ERROR(Integer(node, k.c_str(), 1, 10000, &v));
      (k == "auto_min_rounds" ? a->min_rounds : a->max_rounds) = static_cast<int>(v);
    } else if (k == "auto_budget") {
      std::string text;
      if (node.is_integer() || node.is_floating_point()) {
        text = fmt::format("{}", *node.value<double>());
      } else {
        LB_RETURN_IF_ERROR(String(node, "auto_budget", &text));
      }
      Status s = ParseDuration(text, "auto_budget", &a->budget_s);
      if (!s.ok()) return BadAt(path_, node.source(), s.message());
    } else {
      *known = false;
      return Status::Ok();
    }
    auto_where_ = &node.source();
    return Status::Ok();
  }

  // The keys of what runs: name, timeout_s, profile, profile_hz, procs, pattern, memory_limit,
  // cache, [system], [[file]], [[strategy]].
  Status PlanKey(const std::string& k, const toml::node& node, Experiment* e, bool* known) {
    *known = true;
    if (k == "name") return String(node, "name", &e->name);
    if (k == "timeout_s") {
      const std::optional<double> v = node.value<double>();  // an integer converts too
      if (!v || !(*v >= 0 && *v <= 7 * 24 * 3600)) {
        return BadAt(path_, node.source(), "timeout_s must be a number of seconds, 0 to 604800");
      }
      e->timeout_s = *v;
      return Status::Ok();
    }
    if (k == "profile") {
      const std::optional<bool> v = node.value<bool>();
      if (!v) return BadAt(path_, node.source(), "profile must be true or false");
      e->profile = *v;
      return Status::Ok();
    }
    if (k == "profile_hz") {
      int64_t v = 0;
      LB_RETURN_IF_ERROR(Integer(node, "profile_hz", 1, kMaxProfileHz, &v));
      e->profile_hz = static_cast<int>(v);
      return Status::Ok();
    }
    if (k == "pattern") {
      e->patterns.clear();
      return Each(node, "pattern", [&](const toml::node& v) {
        ReadPattern p;
        const std::optional<std::string> text = v.value<std::string>();
        if (!text) return BadAt(path_, v.source(), "pattern must be a word or a list of words");
        if (Status s = ParsePattern(*text, &p); !s.ok()) {
          return BadAt(path_, v.source(), s.message());
        }
        e->patterns.push_back(p.Text());
        return Status::Ok();
      });
    }
    if (k == "procs") {
      e->procs.clear();
      e->procs_given = true;
      return Each(node, "procs", [&](const toml::node& v) {
        int64_t n = 0;
        LB_RETURN_IF_ERROR(Integer(v, "procs", 1, 64, &n));
        e->procs.push_back(static_cast<int>(n));
        return Status::Ok();
      });
    }
    if (k == "memory_limit") {
      e->memory_limits.clear();
      return Each(node, "memory_limit", [&](const toml::node& v) {
        uint64_t bytes = 0;
        LB_RETURN_IF_ERROR(Bytes(v, "memory_limit", /*none_ok=*/true, &bytes));
        e->memory_limits.push_back(bytes);
        return Status::Ok();
      });
    }
    if (k == "cache") return Caches(node, &e->caches);
    if (k == "system") return SystemTable(node, &e->system);
    if (k == "server") return ServerTable(node, &e->server);
    if (k == "link") {
      link_where_ = &node.source();
      return LinkTable(node, &e->link);
    }
    if (k == "cluster") {
      cluster_where_ = &node.source();
      return ClusterTable(node, &e->cluster);
    }
    if (k == "file") {
      return Tables(node, "file", [&](const toml::table& t) { return File(t, &e->files); });
    }
    if (k == "strategy") {
      return Tables(node, "strategy",
                    [&](const toml::table& t) { return Strategy(t, &e->strategies); });
    }
    *known = false;
    return Status::Ok();
  }

  // What can only be checked once every key is read: the defaults, the baseline, auto reps.
  Status Finish(const toml::table& top, Experiment* e) {
    if (e->name.empty()) e->name = std::filesystem::path(path_).stem().string();
    if (e->files.empty()) return Status::BadInput(fmt::format("{}: no [[file]]", path_));
    if (e->strategies.empty()) return Status::BadInput(fmt::format("{}: no [[strategy]]", path_));
    std::vector<std::string> specs;
    for (const ExperimentStrategy& st : e->strategies) specs.push_back(st.spec.text);
    if (e->baseline.empty()) {
      e->baseline = DefaultBaseline(specs);
    } else if (std::find(specs.begin(), specs.end(), e->baseline) == specs.end()) {
      return BadAt(path_, *baseline_where_,
                   fmt::format("baseline '{}' is not one of the strategy points ({})", e->baseline,
                               fmt::join(specs, ", ")));
    }
    if (!e->link.rates.empty() && e->server.kind.empty()) {
      return BadAt(path_, *link_where_,
                   "a [link] is between the readers and the experiment's server: it needs "
                   "[server] kind = \"http\" or \"s3\"");
    }
    if (e->cluster.on()) LB_RETURN_IF_ERROR(CheckCluster(e));
    if (Status s = CheckGroupedOrder(*e); !s.ok()) {
      return BadAt(path_, *order_where_, s.message());
    }
    if (auto_where_ != nullptr && !e->auto_reps) {
      return BadAt(path_, *auto_where_, "auto_* keys need reps = \"auto\"");
    }
    if (!e->auto_reps) return Status::Ok();
    if (Status s = CheckAutoReps(e->autoreps); !s.ok()) {
      return BadAt(path_, auto_where_ ? *auto_where_ : top.source(), s.message());
    }
    if (e->order == RoundOrder::kGrouped) {
      return BadAt(path_, *order_where_,
                   "reps = \"auto\" compares within rounds: order "
                   "must be interleaved or shuffled, not grouped");
    }
    e->reps = e->autoreps.max_rounds;
    return Status::Ok();
  }

  static std::string ViaError(const std::string& v) {
    return fmt::format("via = \"{}\": it takes \"local\", \"http\", \"s3\" or \"s3fs\"", v);
  }

  Status Via(const toml::node& n, std::string* out) {
    std::string v;
    LB_RETURN_IF_ERROR(String(n, "via", &v));
    if (!IsVia(v)) return BadAt(path_, n.source(), ViaError(v));
    *out = v == "local" ? "" : v;
    return Status::Ok();
  }

  // [server]: kind = "http"|"s3", bucket = NAME (s3), limit_rate = SIZE per second (http).
  Status ServerTable(const toml::node& n, ExperimentServer* out) {
    const toml::table* t = n.as_table();
    if (t == nullptr) return BadAt(path_, n.source(), "server must be a table: [server]");
    for (const auto& [key, node] : *t) {
      const std::string k(key.str());
      if (k == "kind") {
        LB_RETURN_IF_ERROR(String(node, "server.kind", &out->kind));
        if (out->kind != "http" && out->kind != "s3") {
          return BadAt(path_, node.source(), "server.kind must be \"http\" or \"s3\"");
        }
      } else if (k == "bucket") {
        LB_RETURN_IF_ERROR(String(node, "server.bucket", &out->bucket));
      } else if (k == "limit_rate") {
        LB_RETURN_IF_ERROR(Bytes(node, "server.limit_rate", /*none_ok=*/true, &out->limit_rate));
      } else {
        return BadAt(path_, node.source(),
                     fmt::format("[server]: unknown key '{}' (it takes kind, bucket and "
                                 "limit_rate)",
                                 k));
      }
    }
    if (out->kind.empty())
      return BadAt(path_, n.source(), "[server] needs kind = \"http\" or \"s3\"");
    if (out->limit_rate > 0 && out->kind != "http") {
      return BadAt(path_, n.source(), "server.limit_rate is nginx's: it needs kind = \"http\"");
    }
    return Status::Ok();
  }

  // [link]: rate = RATE or a list (an axis of the plan), delay = TIME, streams = N, seconds = N.
  Status LinkTable(const toml::node& n, ExperimentLink* out) {
    const toml::table* t = n.as_table();
    if (t == nullptr) return BadAt(path_, n.source(), "link must be a table: [link]");
    for (const auto& [key, node] : *t) {
      const std::string k(key.str());
      int64_t v = 0;
      if (k == "rate") {
        LB_RETURN_IF_ERROR(Each(node, "link.rate", [&](const toml::node& r) {
          std::string text;
          uint64_t bits = 0;
          LB_RETURN_IF_ERROR(String(r, "link.rate", &text));
          if (Status s = ParseLinkRate(text, &bits); !s.ok()) {
            return BadAt(path_, r.source(), s.message());
          }
          out->rates.push_back(text);
          return Status::Ok();
        }));
      } else if (k == "delay") {
        uint64_t us = 0;
        LB_RETURN_IF_ERROR(String(node, "link.delay", &out->delay));
        if (Status s = ParseLinkDelay(out->delay, &us); !s.ok()) {
          return BadAt(path_, node.source(), s.message());
        }
      } else if (k == "streams") {
        LB_RETURN_IF_ERROR(Integer(node, "link.streams", 1, 128, &v));
        out->streams = static_cast<int>(v);
      } else if (k == "seconds") {
        LB_RETURN_IF_ERROR(Integer(node, "link.seconds", 1, 60, &v));
        out->seconds = static_cast<int>(v);
      } else {
        return BadAt(path_, node.source(),
                     fmt::format("[link]: unknown key '{}' (it takes rate, delay, streams and "
                                 "seconds)",
                                 k));
      }
    }
    if (out->rates.empty())
      return BadAt(path_, n.source(), "[link] needs rate = \"1gbit\" (or a list)");
    return Status::Ok();
  }

  // [cluster]: nodes = N or a list, nic = RATE, uplink = RATE, streams = N, seconds = N.
  Status ClusterTable(const toml::node& n, ExperimentCluster* out) {
    const toml::table* t = n.as_table();
    if (t == nullptr) return BadAt(path_, n.source(), "cluster must be a table: [cluster]");
    for (const auto& [key, node] : *t) {
      const std::string k(key.str());
      int64_t v = 0;
      if (k == "nodes") {
        LB_RETURN_IF_ERROR(Each(node, "cluster.nodes", [&](const toml::node& x) {
          LB_RETURN_IF_ERROR(Integer(x, "cluster.nodes", 1, kMaxClusterNodes, &v));
          out->nodes.push_back(static_cast<int>(v));
          return Status::Ok();
        }));
      } else if (k == "nic" || k == "uplink") {
        std::string* rate = k == "nic" ? &out->nic : &out->uplink;
        uint64_t bits = 0;
        LB_RETURN_IF_ERROR(String(node, ("cluster." + k).c_str(), rate));
        if (Status s = ParseLinkRate(*rate, &bits); !s.ok() || bits == 0) {
          return BadAt(path_, node.source(),
                       s.ok() ? fmt::format("cluster.{}: a rate (\"200mbit\"), not unshaped", k)
                              : s.message());
        }
      } else if (k == "streams" || k == "seconds") {
        LB_RETURN_IF_ERROR(
            Integer(node, ("cluster." + k).c_str(), 1, k == "streams" ? 128 : 60, &v));
        (k == "streams" ? out->streams : out->seconds) = static_cast<int>(v);
      } else {
        return BadAt(path_, node.source(),
                     fmt::format("[cluster]: unknown key '{}' (it takes nodes, nic, uplink, "
                                 "streams and seconds)",
                                 k));
      }
    }
    if (out->nodes.empty()) return BadAt(path_, n.source(), "[cluster] needs nodes = [1, 2, 4]");
    return Status::Ok();
  }

  // A cluster's nodes are its readers, one per MPI rank; its server runs in the store's
  // namespace.
  Status CheckCluster(Experiment* e) const {
    if (e->procs_given) {
      return BadAt(path_, *cluster_where_,
                   "[cluster] nodes are the readers: leave procs out (nodes sets it)");
    }
    if (!e->link.rates.empty()) {
      return BadAt(path_, *cluster_where_,
                   "[cluster] and [link] do not go together: a cluster "
                   "shapes every node's link and the store's itself");
    }
    if (e->server.kind.empty()) {
      return BadAt(path_, *cluster_where_,
                   "a [cluster]'s nodes load from the experiment's server: it needs [server] "
                   "kind = \"http\" or \"s3\"");
    }
    e->procs = e->cluster.nodes;
    e->procs_given = true;
    return Status::Ok();
  }

  // [system]: tune = true|false|"auto", page_reporting = "off"|"keep" (only with tune),
  // settle = true|false.
  Status SystemTable(const toml::node& n, ExperimentSystem* out) {
    const toml::table* t = n.as_table();
    if (t == nullptr) return BadAt(path_, n.source(), "system must be a table: [system]");
    const toml::node* page_reporting = nullptr;
    for (const auto& [key, node] : *t) {
      const std::string k(key.str());
      if (k == "tune") {
        const std::optional<bool> v = node.value<bool>();
        const std::optional<std::string> text = node.value<std::string>();
        out->tune_auto = text == "auto";
        if (!v && !out->tune_auto) {
          return BadAt(path_, node.source(), "system.tune must be true, false or \"auto\"");
        }
        out->tune = v.value_or(true);
      } else if (k == "settle") {
        const std::optional<bool> v = node.value<bool>();
        if (!v) return BadAt(path_, node.source(), "system.settle must be true or false");
        out->settle = *v;
      } else if (k == "page_reporting") {
        std::string text;
        LB_RETURN_IF_ERROR(String(node, "system.page_reporting", &text));
        Status s = ParsePageReportingChoice(text, "system.page_reporting", &out->page_reporting);
        if (!s.ok()) return BadAt(path_, node.source(), s.message());
        page_reporting = &node;
      } else {
        return BadAt(
            path_, node.source(),
            fmt::format("[system]: unknown key '{}' (it takes tune, page_reporting and settle)",
                        k));
      }
    }
    if (page_reporting != nullptr && !out->tune) {
      return BadAt(path_, page_reporting->source(),
                   "system.page_reporting says how to tune: it needs tune = true");
    }
    return Status::Ok();
  }

  Status String(const toml::node& n, const char* what, std::string* out) {
    auto v = n.value<std::string>();
    if (!v) return BadAt(path_, n.source(), fmt::format("{} must be a string", what));
    *out = *v;
    return Status::Ok();
  }

  // A scalar or a list of scalars, each given to `fn`; a list must not be empty.
  template <typename Fn>
  Status Each(const toml::node& n, const char* what, Fn&& fn) {
    if (const toml::array* a = n.as_array()) {
      if (a->empty()) return BadAt(path_, n.source(), fmt::format("{} is an empty list", what));
      for (const toml::node& v : *a) LB_RETURN_IF_ERROR(fn(v));
      return Status::Ok();
    }
    return fn(n);
  }

  // A size: "4GiB", an integer number of bytes, or (none_ok) "none" for 0.
  Status Bytes(const toml::node& n, const char* what, bool none_ok, uint64_t* out) {
    if (n.is_integer() && *n.value<int64_t>() > 0) {
      *out = static_cast<uint64_t>(*n.value<int64_t>());
      return Status::Ok();
    }
    auto text = n.value<std::string>();
    if (text && none_ok && *text == "none") {
      *out = 0;
      return Status::Ok();
    }
    Status s = text ? ParseBytes(*text, what, out)
                    : Status::BadInput(fmt::format("{} must be a size such as \"4GiB\"{}", what,
                                                   none_ok ? " or \"none\"" : ""));
    if (s.ok() && *out == 0) s = Status::BadInput(fmt::format("{} must not be 0", what));
    if (!s.ok()) return BadAt(path_, n.source(), s.message());
    return Status::Ok();
  }

  Status Integer(const toml::node& n, const char* what, int64_t lo, int64_t hi, int64_t* out) {
    if (!n.is_integer()) {
      return BadAt(path_, n.source(), fmt::format("{} must be an integer", what));
    }
    *out = *n.value<int64_t>();
    if (*out < lo || *out > hi) {
      return BadAt(path_, n.source(),
                   fmt::format("{} = {} is out of range ({} to {})", what, *out, lo, hi));
    }
    return Status::Ok();
  }

  Status Caches(const toml::node& n, std::vector<std::string>* out) {
    std::vector<std::string> caches;
    auto add = [&](const toml::node& c) {
      auto v = c.value<std::string>();
      if (!v || (*v != "cold" && *v != "warm" && *v != "both")) {
        return BadAt(path_, c.source(), "cache must be \"cold\", \"warm\" or \"both\"");
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
    if (caches.empty()) return BadAt(path_, n.source(), "cache is an empty list");
    *out = std::move(caches);
    return Status::Ok();
  }

  template <typename Fn>
  Status Tables(const toml::node& n, const char* what, Fn&& fn) {
    const toml::array* a = n.as_array();
    if (a == nullptr || !a->is_array_of_tables()) {
      return BadAt(path_, n.source(), fmt::format("{} must be written [[{}]]", what, what));
    }
    for (const toml::node& t : *a) LB_RETURN_IF_ERROR(fn(*t.as_table()));
    return Status::Ok();
  }

  Status File(const toml::table& t, std::vector<ExperimentFile>* out) {
    ExperimentFile f;
    std::string size, shard_size;  // as written, for the file's name
    for (const auto& [key, node] : t) {
      const std::string k(key.str());
      if (k == "path") {
        LB_RETURN_IF_ERROR(String(node, "path", &f.path));
      } else if (k == "preset") {
        LB_RETURN_IF_ERROR(String(node, "preset", &f.gen.preset));
      } else if (k == "size") {
        LB_RETURN_IF_ERROR(String(node, "size", &size));
        Status s = SizeOf(size, &f.gen.size_bytes, &size);
        if (!s.ok()) return BadAt(path_, node.source(), s.message());
      } else if (k == "format") {
        LB_RETURN_IF_ERROR(String(node, "format", &f.gen.format));
      } else if (k == "dtype") {
        LB_RETURN_IF_ERROR(String(node, "dtype", &f.gen.dtype));
      } else if (k == "endian") {
        LB_RETURN_IF_ERROR(String(node, "endian", &f.gen.endian));
      } else if (k == "misalign") {
        int64_t v = 0;
        LB_RETURN_IF_ERROR(Integer(node, "misalign", 0, 63, &v));
        f.gen.misalign = static_cast<uint64_t>(v);
      } else if (k == "shards") {
        int64_t v = 0;
        LB_RETURN_IF_ERROR(Integer(node, "shards", 1, static_cast<int64_t>(kMaxShards), &v));
        f.gen.shards = static_cast<uint64_t>(v);
      } else if (k == "shard_size") {
        LB_RETURN_IF_ERROR(Bytes(node, "shard_size", /*none_ok=*/false, &f.gen.shard_size));
        shard_size = node.is_integer() ? std::to_string(f.gen.shard_size)
                                       : FormatSize(*node.value<std::string>());
      } else if (k == "align" || k == "seed") {
        int64_t v = 0;
        LB_RETURN_IF_ERROR(Integer(node, k.c_str(), 0, INT64_MAX, &v));
        (k == "align" ? f.gen.align : f.gen.seed) = static_cast<uint64_t>(v);
      } else {
        return BadAt(path_, node.source(), fmt::format("[[file]]: unknown key '{}'", k));
      }
    }
    if (!f.path.empty()) {
      if (!size.empty()) {
        return BadAt(path_, t.source(),
                     "[[file]] has both path (a file to use) and size (one "
                     "to generate)");
      }
      out->push_back(std::move(f));
      return Status::Ok();
    }
    if (size.empty()) {
      return BadAt(path_, t.source(),
                   "[[file]] needs path (a file to use) or size (one to "
                   "generate)");
    }
    f.generate = true;
    // Named by spec, so that every experiment asking for the same file finds it; a sharded
    // model's shards and index are named after it (shards.h).
    f.gen.out_path =
        fmt::format("{}/{}-{}-{}-s{}{}{}{}{}{}.{}", data_, f.gen.preset, FormatSize(size),
                    f.gen.dtype, f.gen.seed, f.gen.align ? fmt::format("-a{}", f.gen.align) : "",
                    f.gen.endian == "big" ? "-be" : "",
                    f.gen.misalign ? fmt::format("-mis{}", f.gen.misalign) : "",
                    f.gen.shards ? fmt::format("-shards{}", f.gen.shards) : "",
                    f.gen.shard_size ? fmt::format("-shard{}", shard_size) : "", f.gen.format);
    GenPlan plan;
    Status s = PlanGenerated(f.gen, &plan);
    if (!s.ok()) return BadAt(path_, t.source(), s.message());
    f.file_bytes = plan.total_bytes;
    f.path = plan.model_path;  // ModelPath(f.gen): the file, the index or the first split
    out->push_back(std::move(f));
    return Status::Ok();
  }

  // "4GiB", or "1.25xRAM": a multiple of this machine's memory (MemTotal), rounded down to
  // whole MiB, which then names the file ("30720MiB").
  static Status SizeOf(const std::string& text, uint64_t* bytes, std::string* name) {
    constexpr std::string_view kRam = "xRAM";
    if (!text.ends_with(kRam)) return ParseBytes(text, "size", bytes);
    const std::string factor_text = text.substr(0, text.size() - kRam.size());
    char* end = nullptr;
    const double factor = std::strtod(factor_text.c_str(), &end);
    if (factor_text.empty() || end != factor_text.c_str() + factor_text.size() ||
        !(factor > 0 && factor <= 64)) {
      return Status::BadInput(fmt::format(
          "size '{}': a multiple of memory is written like \"1.25xRAM\" (above 0, at most 64)",
          text));
    }
    const uint64_t ram = MeminfoBytes("MemTotal").value_or(0);
    if (ram == 0) return Status::BadInput("size: MemTotal is not readable in /proc/meminfo");
    *bytes = static_cast<uint64_t>(factor * static_cast<double>(ram)) / (1 << 20) * (1 << 20);
    *name = fmt::format("{}MiB", *bytes >> 20);
    return Status::Ok();
  }

  // "4GiB" stays "4GiB"; spaces and slashes cannot reach a file name.
  static std::string FormatSize(const std::string& size) {
    std::string out;
    for (char c : size) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '.') out += c;
    }
    return out;
  }

  // An exec strategy: label, command, shell, package; no grid.
  Status Exec(const toml::table& t, std::vector<ExperimentStrategy>* out) {
    ExecCommand c;
    std::string via;
    const toml::node* command = nullptr;
    for (const auto& [key, node] : t) {
      const std::string k(key.str());
      if (k == "label") {
        LB_RETURN_IF_ERROR(String(node, "label", &c.label));
      } else if (k == "package") {
        LB_RETURN_IF_ERROR(String(node, "package", &c.package));
      } else if (k == "shell") {
        const std::optional<bool> v = node.value<bool>();
        if (!v) return BadAt(path_, node.source(), "exec: shell must be true or false");
        c.shell = *v;
      } else if (k == "command") {
        command = &node;
      } else if (k == "timed") {
        const std::optional<std::string> v = node.value<std::string>();
        if (!v || (*v != kTimedCommand && *v != kTimedRegion)) {
          return BadAt(path_, node.source(), "exec: timed must be \"command\" or \"region\"");
        }
        c.timed = *v;
      } else if (k == "via") {
        LB_RETURN_IF_ERROR(Via(node, &via));
      } else if (k != "name") {
        return BadAt(path_, node.source(),
                     fmt::format("exec: unknown key '{}' (exec takes label, command, shell, "
                                 "package, timed and via)",
                                 k));
      }
    }
    if (c.label.empty()) return BadAt(path_, t.source(), "exec: a label is required");
    if (command == nullptr) return BadAt(path_, t.source(), "exec: a command is required");
    LB_RETURN_IF_ERROR(ExecArgv(*command, c.shell, &c.argv));
    ExperimentStrategy s;
    s.spec = ExecSpec(c.label);
    s.spec.via = via;
    if (Status l = LabelOf(s.spec, &c.label); !l.ok()) return BadAt(path_, t.source(), l.message());
    for (const ExperimentStrategy& other : *out) {
      if (other.spec.text == s.spec.text) {
        return BadAt(path_, t.source(), fmt::format("exec: label '{}' is used twice", c.label));
      }
    }
    s.exec = std::move(c);
    out->push_back(std::move(s));
    return Status::Ok();
  }

  // An exec command: a list of strings, or with shell = true one string.
  Status ExecArgv(const toml::node& n, bool shell, std::vector<std::string>* argv) {
    if (shell) {
      const std::optional<std::string> v = n.value<std::string>();
      if (!v || v->empty()) {
        return BadAt(path_, n.source(), "exec: with shell = true, command is one string");
      }
      *argv = {*v};
      return Status::Ok();
    }
    const toml::array* a = n.as_array();
    if (a == nullptr || a->empty()) {
      return BadAt(path_, n.source(),
                   "exec: command is a list of strings, [\"prog\", \"arg\"] (one string "
                   "for /bin/sh only with shell = true)");
    }
    for (const toml::node& v : *a) {
      const std::optional<std::string> text = v.value<std::string>();
      if (!text) return BadAt(path_, v.source(), "exec: every word of command is a string");
      argv->push_back(*text);
    }
    if (argv->front().empty()) return BadAt(path_, n.source(), "exec: the program is empty");
    return Status::Ok();
  }

  // Option name to its values: one for a scalar, several for a grid axis.
  using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

  Status Strategy(const toml::table& t, std::vector<ExperimentStrategy>* out) {
    if (t["name"].value<std::string>() == kExec) return Exec(t, out);
    std::string name;
    Axes axes;
    for (const auto& [key, node] : t) {
      const std::string k(key.str());
      if (k == "name") {
        LB_RETURN_IF_ERROR(String(node, "name", &name));
        continue;
      }
      std::vector<std::string> values;
      auto add = [&](const toml::node& v) {
        auto text = OptionText(v);
        if (!text) {
          return BadAt(path_, v.source(),
                       fmt::format("option {}: a value must be a string, integer or boolean", k));
        }
        values.push_back(*text);
        return Status::Ok();
      };
      if (const toml::array* a = node.as_array()) {
        for (const toml::node& v : *a) LB_RETURN_IF_ERROR(add(v));
        if (values.empty()) {
          return BadAt(path_, node.source(), fmt::format("option {}: empty list", k));
        }
      } else {
        LB_RETURN_IF_ERROR(add(node));
      }
      axes.emplace_back(k, std::move(values));
    }
    if (name.empty()) return BadAt(path_, t.source(), "[[strategy]] has no name");
    const StrategyInfo* info = FindStrategy(name);
    if (info == nullptr && (CudaNotBuiltReason().empty() || !name.starts_with("cuda_"))) {
      std::vector<std::string> known;
      for (const StrategyInfo* s : Strategies()) known.push_back(s->name);
      return BadAt(path_, t["name"].node()->source(),
                   fmt::format("unknown strategy '{}' (known: {})", name, fmt::join(known, ", ")));
    }
    for (auto& options : Grid(axes)) {
      ExperimentStrategy s;
      s.spec.name = name;
      s.spec.text = name;
      for (const auto& [k, v] : options) s.spec.text += ":" + k + "=" + v;
      s.spec.options = std::move(options);
      LB_RETURN_IF_ERROR(Point(t, info, &s));
      out->push_back(std::move(s));
    }
    return Status::Ok();
  }

  // Every combination of the axes, the first axis varying slowest.
  static std::vector<std::map<std::string, std::string>> Grid(const Axes& axes) {
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

  // One point of a [[strategy]] table checked as `run --strategies` checks it: an option the
  // strategy does not take, or a value it cannot parse, is refused at the option's line; a
  // combination that cannot work here (or a strategy not built: the CUDA ones without the
  // toolkit) is a point recorded unsupported with its reason.
  Status Point(const toml::table& t, const StrategyInfo* info, ExperimentStrategy* s) {
    if (auto v = s->spec.options.find("via"); v != s->spec.options.end()) {
      if (!IsVia(v->second)) return BadAt(path_, t["via"].node()->source(), ViaError(v->second));
      s->spec.via = v->second == "local" ? "" : v->second;
      s->spec.options.erase(v);
    }
    if (info == nullptr) {
      s->unsupported = NotBuiltReason(s->spec.name);
      return Status::Ok();
    }
    Params ignored;
    UseOptions ignored_use;
    const Status st = ResolveSpec(*info, s->spec, &ignored, &ignored_use);
    if (st.code() == Status::Code::kBadInput) {
      return BadAt(path_, OptionNamed(t, st.message()).source(), st.message());
    }
    if (!st.ok()) s->unsupported = st.message();
    return Status::Ok();
  }

  // The option of `t` that a message of ResolveSpec's names ("option chunk: ...", "unknown
  // option 'chunck'"), else the table itself.
  static const toml::node& OptionNamed(const toml::table& t, const std::string& message) {
    for (const auto& [key, node] : t) {
      const std::string k(key.str());
      if (message.find("option " + k + ":") != std::string::npos ||
          message.find("option '" + k + "'") != std::string::npos) {
        return node;
      }
    }
    return t;
  }

  const std::string& path_;
  const std::string& data_;
  // Where keys checked against each other were written, for the message.
  const toml::source_region* auto_where_ = nullptr;
  const toml::source_region* baseline_where_ = nullptr;
  const toml::source_region* order_where_ = nullptr;
  const toml::source_region* link_where_ = nullptr;
  const toml::source_region* cluster_where_ = nullptr;
};

// The opening comment from "# Question:" on, its lines joined, the #s and the label dropped.
std::string QuestionOf(const std::string& path) {
  std::ifstream in(path);
  std::string line, out;
  while (std::getline(in, line) && line.starts_with("#")) {
    std::string text = line.substr(line.find_first_not_of("# ") == std::string::npos
                                       ? line.size()
                                       : line.find_first_not_of("# "));
    if (out.empty() && !text.starts_with("Question:")) break;
    if (out.empty()) text = text.substr(std::string_view("Question:").size());
    out += (out.empty() ? "" : " ") + text;
  }
  const size_t first = out.find_first_not_of(' ');
  return first == std::string::npos ? "" : out.substr(first);
}

}  // namespace

Status LoadExperiment(const std::string& path, const std::string& data_dir, Experiment* out) {
  toml::table top;
  try {
    top = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const std::string what(e.description());
    if (e.source().begin.line == 0) {
      return Status::BadInput(fmt::format("{}: {}", path, what));  // unreadable, not malformed
    }
    return BadAt(path, e.source(), what);
  }
  Experiment e;
  e.path = path;
  e.question = QuestionOf(path);
  LB_RETURN_IF_ERROR(Reader(path, data_dir).Read(top, &e));
  PlanRuns(&e);
  *out = std::move(e);
  return Status::Ok();
}

}  // namespace loadbench
