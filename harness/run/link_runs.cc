#include "harness/run/link_runs.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "harness/cache/served.h"
#include "harness/experiment/file.h"
#include "harness/net/fetch.h"
#include "loaders/use/use.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;
constexpr uint64_t kChunk = 8 << 20;  // the server ceiling's requests
constexpr int kMaxStreams = 128;      // iperf3's most

// The most requests in flight any strategy point keeps (its resolved `concurrency`), at least 1.
int MostConcurrency(const Experiment& e) {
  int most = 1;
  for (const ExperimentStrategy& st : e.strategies) {
    if (st.resolved.info == nullptr) continue;
    const Json j = st.resolved.params.ToJson();
    if (j.contains("concurrency") && j["concurrency"].is_number_integer()) {
      most = std::max(most, j["concurrency"].get<int>());
    }
  }
  return most;
}

}  // namespace

Status LinkRuns::Start(const Experiment& e, const std::string& who) {
  if (e.link.rates.empty()) return Status::Ok();
  e_ = &e;
  concurrency_ = MostConcurrency(e);
  LB_RETURN_IF_ERROR(Link::Make(e.link.rates, e.link.delay, &link_));
  if (Status s = LinkMeter::Start(*link_, &meter_); !s.ok()) {
    return s.code() == Status::Code::kBadInput ? s : Status::BadInput("iperf3: " + s.message());
  }
  fmt::print(stderr, "{}: link {} <-> {} (namespace {}), rates {}{}\n", who,
             link_->client_address(), link_->server_address(), link_->netns(),
             fmt::join(e.link.rates, ", "),
             e.link.delay.empty()     ? ""
             : link_->delay_applied() ? ", delay " + e.link.delay
                                      : ", delay not applied: " + link_->delay_why());
  return Status::Ok();
}

Status LinkRuns::ShapeFor(const Experiment& e, const ExperimentRun& r) {
  if (!link_) return Status::Ok();
  const bool server_ceiling = r.strategy == e.strategies.size() + kServerCeilingRun;
  return link_->Shape(server_ceiling ? "unshaped" : r.link);
}

void LinkRuns::Wire(const RemoteFiles& remote, MeasureSettings* s) {
  if (!link_) return;
  remote_ = &remote;
  s->ceilings[kLinkCeiling] = &link_ceiling_;
  s->ceilings[kServerCeiling] = &server_ceiling_;
}

// iperf3 over the link as the run's condition shapes it, with as many streams as the most
// concurrent strategy point keeps in flight per reader, times the readers.
void LinkRuns::LinkCeiling::Read(const LaunchRequest& req, RunRecord* r) {
  const ExperimentLink& link = runs_.e_->link;
  const int streams =
      link.streams > 0 ? link.streams : std::min(kMaxStreams, runs_.concurrency_ * req.readers);
  uint64_t bits = 0;
  (void)ParseLinkRate(req.link, &bits);
  r->params = {{"tool", "iperf3"},
               {"version", runs_.meter_->Env()["version"]},
               {"streams", streams},
               {"seconds", link.seconds},
               {"direction", "server to client"},
               {"rate", req.link},
               {"bits_per_s", bits > 0 ? Json(bits) : Json(nullptr)}};
  Json m;
  if (Status s = runs_.meter_->Measure(streams, link.seconds, &m); !s.ok()) {
    r->status = "failed", r->error = s.message();
    return;
  }
  r->status = "ok";
  r->gb_per_s = m["gb_per_s"].get<double>();
  r->wall_s = m["seconds"].get<double>();
  r->ceiling_bytes = m["bytes"].get<uint64_t>();
  r->details = {{"receiver_bits_per_s", m["receiver_bits_per_s"]},
                {"sender_bits_per_s", m["sender_bits_per_s"]},
                {"retransmits", m["retransmits"]}};
}

// The model's objects through the server, warm at the server (its own limit, not the disk's),
// the link unshaped (ShapeFor), with the most concurrency of the strategy points.
void LinkRuns::ServerCeiling::Read(const LaunchRequest& req, RunRecord* r) {
  const RemoteFiles& remote = *runs_.remote_;
  const PreparedFile* view = remote.ViewOf(req.worker.file);
  r->params = {{"concurrency", runs_.concurrency_}, {"chunk", kChunk}, {"link", "unshaped for it"}};
  if (view == nullptr) {
    r->status = "unsupported", r->error = "no strategy point reads the model through the server";
    return;
  }
  r->params["read_as"] = view->read_as;
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  for (const ShardInfo& sh : view->table.shards) {
    names.push_back(sh.path);
    sizes.push_back(sh.file_size);
    if (const std::string local = LocalFileOf(sh.path); !local.empty()) (void)WarmFile(local);
  }
  const double cpu0 = remote.ServerCpuSeconds();
  FetchResult f;
  if (Status s = FetchIntoNothing(names, sizes, runs_.concurrency_, kChunk, &f); !s.ok()) {
    r->status = "failed", r->error = s.message();
    return;
  }
  r->status = "ok";
  r->wall_s = f.seconds;
  r->gb_per_s = static_cast<double>(f.bytes) / f.seconds / 1e9;
  r->ceiling_bytes = f.bytes;
  r->details = f.stats.ToJson();
  r->server_cpu_s = std::round((remote.ServerCpuSeconds() - cpu0) * 100) / 100;
}

Json LinkRuns::Env() const {
  if (!link_) return nullptr;
  Json j = link_->Env();
  j["rates"] = e_->link.rates;
  j["iperf3"] = meter_->Env();
  j["ceilings"] = {{"streams", e_->link.streams > 0 ? Json(e_->link.streams)
                                                    : Json("most concurrency x procs")},
                   {"concurrency", concurrency_},
                   {"seconds", e_->link.seconds},
                   {"server_chunk", kChunk}};
  return j;
}

}  // namespace loadbench
