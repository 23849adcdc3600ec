// The tables of the network: [server], the experiment's server on this machine
// (harness/run/remote_files.h); [link], that server behind a shaped link (harness/net/link.h);
// [cluster], the readers as nodes of a cluster (harness/net/cluster.h).
#include "harness/experiment/tables.h"
#include "harness/net/cluster.h"
#include "harness/net/link.h"

namespace loadbench {

// [server]: kind = "http"|"s3", bucket = NAME (s3), limit_rate = SIZE per second (http).
Status ReadServer(const TableReader& r, const toml::node& n, ExperimentServer* out) {
  const toml::table* t = n.as_table();
  if (t == nullptr) return r.Bad(n, "server must be a table: [server]");
  for (const auto& [key, node] : *t) {
    const std::string k(key.str());
    if (k == "kind") {
      LB_RETURN_IF_ERROR(r.String(node, "server.kind", &out->kind));
      if (out->kind != "http" && out->kind != "s3") {
        return r.Bad(node, "server.kind must be \"http\" or \"s3\"");
      }
    } else if (k == "bucket") {
      LB_RETURN_IF_ERROR(r.String(node, "server.bucket", &out->bucket));
    } else if (k == "limit_rate") {
      LB_RETURN_IF_ERROR(r.Bytes(node, "server.limit_rate", /*none_ok=*/true, &out->limit_rate));
    } else {
      return r.Bad(node, fmt::format("[server]: unknown key '{}' (it takes kind, bucket and "
                                     "limit_rate)",
                                     k));
    }
  }
  if (out->kind.empty()) return r.Bad(n, "[server] needs kind = \"http\" or \"s3\"");
  if (out->limit_rate > 0 && out->kind != "http") {
    return r.Bad(n, "server.limit_rate is nginx's: it needs kind = \"http\"");
  }
  return Status::Ok();
}

// [link]: rate = RATE or a list (an axis of the plan), delay = TIME, streams = N, seconds = N.
Status ReadLink(const TableReader& r, const toml::node& n, ExperimentLink* out) {
  const toml::table* t = n.as_table();
  if (t == nullptr) return r.Bad(n, "link must be a table: [link]");
  for (const auto& [key, node] : *t) {
    const std::string k(key.str());
    int64_t v = 0;
    if (k == "rate") {
      LB_RETURN_IF_ERROR(r.Each(node, "link.rate", [&](const toml::node& x) {
        std::string text;
        uint64_t bits = 0;
        LB_RETURN_IF_ERROR(r.String(x, "link.rate", &text));
        if (Status s = ParseLinkRate(text, &bits); !s.ok()) return r.Bad(x, s.message());
        out->rates.push_back(text);
        return Status::Ok();
      }));
    } else if (k == "delay") {
      uint64_t us = 0;
      LB_RETURN_IF_ERROR(r.String(node, "link.delay", &out->delay));
      if (Status s = ParseLinkDelay(out->delay, &us); !s.ok()) return r.Bad(node, s.message());
    } else if (k == "streams") {
      LB_RETURN_IF_ERROR(r.Integer(node, "link.streams", 1, 128, &v));
      out->streams = static_cast<int>(v);
    } else if (k == "seconds") {
      LB_RETURN_IF_ERROR(r.Integer(node, "link.seconds", 1, 60, &v));
      out->seconds = static_cast<int>(v);
    } else {
      return r.Bad(node, fmt::format("[link]: unknown key '{}' (it takes rate, delay, streams and "
                                     "seconds)",
                                     k));
    }
  }
  if (out->rates.empty()) return r.Bad(n, "[link] needs rate = \"1gbit\" (or a list)");
  return Status::Ok();
}

// [cluster]: nodes = N or a list, nic = RATE, uplink = RATE, streams = N, seconds = N.
Status ReadCluster(const TableReader& r, const toml::node& n, ExperimentCluster* out) {
  const toml::table* t = n.as_table();
  if (t == nullptr) return r.Bad(n, "cluster must be a table: [cluster]");
  for (const auto& [key, node] : *t) {
    const std::string k(key.str());
    int64_t v = 0;
    if (k == "nodes") {
      LB_RETURN_IF_ERROR(r.Each(node, "cluster.nodes", [&](const toml::node& x) {
        LB_RETURN_IF_ERROR(r.Integer(x, "cluster.nodes", 1, kMaxClusterNodes, &v));
        out->nodes.push_back(static_cast<int>(v));
        return Status::Ok();
      }));
    } else if (k == "nic" || k == "uplink") {
      std::string* rate = k == "nic" ? &out->nic : &out->uplink;
      uint64_t bits = 0;
      LB_RETURN_IF_ERROR(r.String(node, ("cluster." + k).c_str(), rate));
      if (Status s = ParseLinkRate(*rate, &bits); !s.ok() || bits == 0) {
        return r.Bad(node, s.ok() ? fmt::format("cluster.{}: a rate (\"200mbit\"), not unshaped", k)
                                  : s.message());
      }
    } else if (k == "streams" || k == "seconds") {
      LB_RETURN_IF_ERROR(
          r.Integer(node, ("cluster." + k).c_str(), 1, k == "streams" ? 128 : 60, &v));
      (k == "streams" ? out->streams : out->seconds) = static_cast<int>(v);
    } else {
      return r.Bad(node, fmt::format("[cluster]: unknown key '{}' (it takes nodes, nic, uplink, "
                                     "streams and seconds)",
                                     k));
    }
  }
  if (out->nodes.empty()) return r.Bad(n, "[cluster] needs nodes = [1, 2, 4]");
  return Status::Ok();
}

// A cluster's nodes are its readers, one per MPI rank; its server runs in the store's
// namespace.
Status CheckCluster(const TableReader& r, Experiment* e) {
  if (e->procs_given) {
    return r.Bad(*r.cluster_where,
                 "[cluster] nodes are the readers: leave procs out (nodes sets it)");
  }
  if (!e->link.rates.empty()) {
    return r.Bad(*r.cluster_where, "[cluster] and [link] do not go together: a cluster "
                                   "shapes every node's link and the store's itself");
  }
  if (e->server.kind.empty()) {
    return r.Bad(*r.cluster_where,
                 "a [cluster]'s nodes load from the experiment's server: it needs [server] "
                 "kind = \"http\" or \"s3\"");
  }
  e->procs = e->cluster.nodes;
  e->procs_given = true;
  return Status::Ok();
}

}  // namespace loadbench
