// fleet: one model onto every reader of a run, as N nodes of a deployment load the same
// checkpoint from one store, by one of the designs that production uses (docs/fleet.md):
//   every   each node pulls the whole model from the store (ranged GETs, as http_ranges)
//   bcast   node 0 pulls; each chunk, as it lands, goes to one other node, which passes it on
//           to the rest: a pipelined scatter and all-gather, the broadcast MPI libraries use for
//           large messages, so that no node sends much more than the model once
//   stripe  node k pulls every N-th chunk from the k-th; once its stripe is in, it sends it to
//           every other node (an all-gather)
//   chain   node 0 pulls; node k passes each chunk to node k + 1 as it lands (a relay, the
//           simplest design that uses every NIC at its rate both ways)
// The chunks between nodes move over TCP (loaders/blocks/peers.h), on a cluster across the
// nodes' shaped NICs. A node's load ends once it holds every byte and has sent all it was to
// send; the pipeline then checks the whole model's checksum, as on every node.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include <fmt/format.h>

#include "loaders/blocks/object_load.h"
#include "loaders/blocks/peers.h"
#include "loaders/remote/ranges.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kConnectS = 60;  // every node has its listener up by then

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class FleetLoader final : public ObjectLoader {
 public:
  explicit FleetLoader(const Params& params)
      : ObjectLoader(params),
        design_(params.Choice("design")),
        chunk_(params.Bytes("chunk")),
        concurrency_(static_cast<int>(params.Int("concurrency"))),
        port_(static_cast<int>(params.Int("port"))) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    start_ = Clock::now();
    LB_RETURN_IF_ERROR(PeerPlaceFromEnv(&place_));
    const FileSpan span = TensorSpan(table, 1);
    LB_RETURN_IF_ERROR(Allocate(span.size(), path));
    chunks_ = ChunkRange(0, span.begin, span.end, chunk_, region_.data());
    LB_RETURN_IF_ERROR(OpenMesh());
    connect_s_ = Since(start_);
    LB_RETURN_IF_ERROR(Pull(path, table.file_size));
    LB_RETURN_IF_ERROR(WaitForAll(span.size()));
    ready_s_ = Since(start_);
    mesh_.EndSends();
    LB_RETURN_IF_ERROR(mesh_.Wait());
    ViewsIntoSpan(table, span, region_.data(), views);
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    nlohmann::json d = ObjectLoader::Details();
    d["design"] = design_;
    d["node"] = place_.node;
    d["nodes"] = place_.nodes;
    d["ready_s"] = ready_s_;
    d["connect_s"] = connect_s_;
    d["store_bytes"] = stats_.bytes_received;
    d["store_requests"] = stats_.requests;
    d["peer_rx_bytes"] = mesh_.rx_bytes();
    d["peer_tx_bytes"] = mesh_.tx_bytes();
    d["peer_rejected"] = mesh_.rejected();
    return d;
  }

 private:
  int N() const { return place_.nodes; }
  int Me() const { return place_.node; }
  // bcast: the node chunk c goes to first, which passes it on.
  int Owner(size_t c) const { return 1 + static_cast<int>(c % static_cast<size_t>(N() - 1)); }
  bool Pulls(size_t c) const {
    if (design_ == "every" || N() == 1) return true;
    if (design_ == "stripe") return static_cast<int>(c % static_cast<size_t>(N())) == Me();
    return Me() == 0;
  }

  // Whom this node sends to and who sends to it.
  MeshPlan Plan() const {
    MeshPlan plan{.port = port_, .to = {}, .from = {}, .connect_s = kConnectS};
    if (design_ == "every" || N() == 1) return plan;
    if (design_ == "chain") {
      if (Me() + 1 < N()) plan.to.push_back(Me() + 1);
      if (Me() > 0) plan.from.push_back(Me() - 1);
      return plan;
    }
    const bool bcast = design_ == "bcast";
    for (int j = 0; j < N(); ++j) {
      if (j == Me()) continue;
      if (!bcast || j > 0) plan.to.push_back(j);
      if (!bcast || Me() > 0) plan.from.push_back(j);
    }
    return plan;
  }

  // The node chunk c comes from, to a node that does not pull it itself.
  int Sender(size_t c) const {
    if (design_ == "chain") return Me() - 1;
    if (design_ == "stripe") return static_cast<int>(c % static_cast<size_t>(N()));
    return Owner(c) == Me() ? 0 : Owner(c);  // bcast
  }

  // Whether this node still needs chunk `c` from node `from`: one of the model's chunks, whole,
  // that it does not pull itself, from the node that sends it that chunk, and not in yet.
  std::string Claim(int from, const Chunk& c) {
    const size_t i = c.offset / chunk_;
    if (c.offset % chunk_ != 0 || i >= chunks_.size() || c.len != chunks_[i].len) {
      return fmt::format("not one of the model's {} chunks", chunks_.size());
    }
    if (Pulls(i)) return fmt::format("node {} pulls chunk {} itself", Me(), i);
    if (Sender(i) != from) return fmt::format("chunk {} comes from node {}", i, Sender(i));
    std::lock_guard<std::mutex> lock(mu_);
    if (claimed_[i]) return fmt::format("chunk {} is in already", i);
    claimed_[i] = true;
    return "";
  }

  Status OpenMesh() {
    const MeshPlan plan = Plan();
    expects_peers_ = !plan.from.empty();
    claimed_.assign(chunks_.size(), false);
    if (plan.to.empty() && plan.from.empty()) return Status::Ok();
    return mesh_.Open(
        place_, plan, region_.data(), region_.size(),
        [this](int from, const Chunk& c) { return Claim(from, c); },
        [this](const Chunk& c) { Landed(c, /*from_store=*/false); });
  }

  // A chunk in place: passed on as the design says, then counted.
  void Landed(const Chunk& c, bool from_store) {
    const size_t index = c.offset / chunk_;
    if (design_ == "chain" && Me() + 1 < N()) mesh_.Send(Me() + 1, c);
    if (design_ == "bcast" && N() > 1) {
      if (from_store) {
        mesh_.Send(Owner(index), c);
      } else if (Owner(index) == Me()) {
        for (int j = 1; j < N(); ++j) {
          if (j != Me()) mesh_.Send(j, c);
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    have_ += c.len;
    cv_.notify_all();
  }

  // The store's chunks this node pulls, each passed on as it lands; stripe's sent once all are in.
  Status Pull(const std::string& path, uint64_t file_size) {
    std::vector<RangeRequest> mine;
    for (size_t c = 0; c < chunks_.size(); ++c) {
      if (Pulls(c)) mine.push_back(chunks_[c]);
    }
    if (mine.empty()) return Status::Ok();
    std::vector<RemoteObject> objects(1);
    ObjectHead head;
    LB_RETURN_IF_ERROR(Open(path, file_size, &objects[0], &head));
    const std::vector<std::string> etags = {head.etag};
    const uint64_t base = chunks_.front().offset;
    size_t next = 0;
    const RangeRunner runner{objects, etags, concurrency_, Timeouts{}, &stats_};
    LB_RETURN_IF_ERROR(runner.Run(
        [&](RangeRequest* r) {
          if (next == mine.size()) return false;
          *r = mine[next++];
          return true;
        },
        [&](const RangeRequest& r) {
          Landed({r.offset - base, r.len}, /*from_store=*/true);
          return Status::Ok();
        }));
    if (design_ == "stripe") {
      for (const RangeRequest& r : mine) {
        for (int j = 0; j < N(); ++j) {
          if (j != Me()) mesh_.Send(j, {r.offset - base, r.len});
        }
      }
    }
    return Status::Ok();
  }

  // Until every byte has landed; or a connection failed, or every node that sends to this one
  // closed with bytes still missing.
  Status WaitForAll(uint64_t size) {
    std::unique_lock<std::mutex> lock(mu_);
    while (have_ < size) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      if (have_ >= size) break;
      lock.unlock();
      const std::string why = mesh_.error();
      const bool closed = expects_peers_ && !mesh_.receiving();
      lock.lock();
      if (!why.empty()) return Status::IOError(fmt::format("fleet node {}: {}", Me(), why));
      if (closed && have_ < size) {
        return Status::IOError(
            fmt::format("fleet node {}: every node that sends to it closed with {} of {} bytes in",
                        Me(), have_, size));
      }
    }
    return Status::Ok();
  }

  std::string design_;
  uint64_t chunk_;
  int concurrency_, port_;
  PeerPlace place_;
  std::vector<RangeRequest> chunks_;
  PeerMesh mesh_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t have_ = 0;
  std::vector<bool> claimed_;   // per chunk: taken from a peer (guarded by mu_)
  bool expects_peers_ = false;  // some node sends to this one
  Clock::time_point start_;
  double ready_s_ = 0, connect_s_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "fleet",
    .summary = "the run's readers as nodes loading one model: every, bcast, stripe or chain",
    .options =
        {{"design",
          OptionSpec::Kind::kChoice,
          "every",
          "every node from the store, or node 0 broadcasts, stripes all-gathered, a chain",
          {"every", "bcast", "stripe", "chain"}},
         {"chunk", OptionSpec::Kind::kBytes, "4MiB", "bytes per ranged GET and per chunk"},
         {"concurrency", OptionSpec::Kind::kInt, "4", "store requests in flight", {}, 1, 256},
         {"port",
          OptionSpec::Kind::kInt,
          "29400",
          "node K listens on port + K (at most 65535)",
          {},
          1024,
          65535},
         BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<FleetLoader>(p);
    },
    .flags = kEager | kAllocates | kRemote | kThreads,
}));

}  // namespace loadbench
