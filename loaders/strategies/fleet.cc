// fleet: one model onto every reader of a run, as N nodes of a deployment load the same
// checkpoint from one store, by one of the designs that production uses (docs/fleet.md):
//   every   each node pulls the whole model from the store (ranged GETs, as http_ranges)
//   bcast   node 0 pulls; each chunk, as it lands, goes to one other node, which passes it on
//           to the rest: a pipelined scatter and all-gather, the broadcast MPI libraries use for
//           large messages, so that no node sends much more than the model once
//   stripe  node k pulls every N-th chunk from the k-th and sends each to every other node: once
//           its whole stripe is in (stripe = "phased": the pulls, then an all-gather), or each
//           chunk as it lands (stripe = "pipelined": the all-gather under the pulls)
//   chain   node 0 pulls; node k passes each chunk to node k + 1 as it lands (a relay, the
//           simplest design that uses every NIC at its rate both ways)
// What a node needs is the run's read pattern (loaders/use/part.h). Replicated, every node needs
// the whole model, as above. Under another pattern (tp: node k needs its 1/N slice of every
// tensor) each node ends with its part packed in its part's table order, and
//   every   pulls only its slices (ranged GETs of them, adjacent ones merged, cut at `chunk`)
//   stripe  is every: the stripe a node pulls is then its own slices, which no other node needs
//   bcast   is a scatter: node 0 pulls every tensor and sends node k exactly its slices, each as
//           the chunk that holds it lands; node 0 keeps its own
//   chain   still relays every byte to every node (a relay has no other way), and each node
//           keeps its part: it receives N times the bytes it needs
// The chunks between nodes move over TCP (loaders/blocks/peers.h), on a cluster across the
// nodes' shaped NICs. A node's load ends once it holds every byte it needs and has sent all it
// was to send; the pipeline then checks its checksum (the model's, or its part's), as on every
// node.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "loaders/blocks/object_load.h"
#include "loaders/blocks/part_ranges.h"
#include "loaders/blocks/peers.h"
#include "loaders/remote/ranges.h"
#include "loaders/strategy/strategy.h"
#include "loaders/use/part.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kConnectS = 60;  // every node has its listener up by then

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The tensors of `t` that lie in the file at `path`: all of them when the model is one file.
std::vector<TensorInfo> TensorsIn(const TensorTable& t, bool sharded, const std::string& path) {
  if (!sharded) return t.tensors;
  std::vector<TensorInfo> out;
  for (const TensorInfo& x : t.tensors) {
    if (t.shards.at(x.shard).path == path) out.push_back(x);
  }
  return out;
}

class FleetLoader final : public ObjectLoader {
 public:
  explicit FleetLoader(const Params& params)
      : ObjectLoader(params),
        design_(params.Choice("design")),
        stripe_(params.Choice("stripe")),
        chunk_(params.Bytes("chunk")),
        concurrency_(static_cast<int>(params.Int("concurrency"))),
        port_(static_cast<int>(params.Int("port"))) {}

  void SetPart(const PartPlace& place) override { part_ = place; }

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    start_ = Clock::now();
    LB_RETURN_IF_ERROR(PeerPlaceFromEnv(&place_));
    LB_RETURN_IF_ERROR(part_ ? LayOutPart(path, table) : LayOutWhole(path, table));
    LB_RETURN_IF_ERROR(OpenMesh());
    connect_s_ = Since(start_);
    LB_RETURN_IF_ERROR(Pull(path, table.file_size));
    LB_RETURN_IF_ERROR(WaitForAll());
    ready_s_ = Since(start_);
    mesh_.EndSends();
    LB_RETURN_IF_ERROR(mesh_.Wait());
    views->insert(views->end(), views_.begin(), views_.end());
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    nlohmann::json d = ObjectLoader::Details();
    d["design"] = design_;
    if (design_ == "stripe") d["stripe"] = stripe_;
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
  // A piece this node takes from a peer: where it goes in its buffer, and who sends it.
  struct Expect {
    Chunk at;
    int from = 0;
  };

  int N() const { return place_.nodes; }
  int Me() const { return place_.node; }
  // Replicated bcast: the node chunk c goes to first, which passes it on.
  int Owner(size_t c) const { return 1 + static_cast<int>(c % static_cast<size_t>(N() - 1)); }
  // Replicated: whether this node pulls chunk c itself.
  bool Pulls(size_t c) const {
    if (design_ == "every" || N() == 1) return true;
    if (design_ == "stripe") return static_cast<int>(c % static_cast<size_t>(N())) == Me();
    return Me() == 0;
  }
  // Replicated: the node chunk c comes from, to a node that does not pull it itself.
  int Sender(size_t c) const {
    if (design_ == "chain") return Me() - 1;
    if (design_ == "stripe") return static_cast<int>(c % static_cast<size_t>(N()));
    return Owner(c) == Me() ? 0 : Owner(c);  // bcast
  }

  // Every node needs the whole model: every node's buffer holds the tensors' span of the file,
  // so a chunk's offset on the wire is its place in both buffers.
  Status LayOutWhole(const std::string& path, const TensorTable& table) {
    const FileSpan span = TensorSpan(table, 1);
    LB_RETURN_IF_ERROR(Allocate(span.size(), path));
    base_ = span.begin;
    const std::vector<RangeRequest> chunks =
        ChunkRange(0, span.begin, span.end, chunk_, region_.data());
    for (size_t c = 0; c < chunks.size(); ++c) {
      const Placed p{chunks[c].offset, chunks[c].len, chunks[c].offset - base_};
      if (Pulls(c)) {
        pulls_.push_back(p);
      } else {
        expected_.push_back({{p.at, p.len}, Sender(c)});
      }
    }
    ViewsIntoSpan(table, span, region_.data(), &views_);
    return Status::Ok();
  }

  // Each node needs its part (`table`, its tensors in the file at `path`): packed in its table's
  // order, but for bcast's node 0, which holds every tensor's bytes at their place in the span.
  Status LayOutPart(const std::string& path, const TensorTable& table) {
    if (part_->parts != N() || part_->part != Me()) {
      return Status::BadInput(fmt::format("{}={}/{} but the run's part is {} of {}", kReaderVar,
                                          Me(), N(), part_->part, part_->parts));
    }
    if (design_ == "chain") return LayOutRelay(path, table);
    if (design_ != "bcast") return LayOutPacked(path, table, {});
    const TensorTable& model = *part_->model;
    std::vector<std::vector<TensorInfo>> needs;
    LB_RETURN_IF_ERROR(Needs(path, &needs));
    const std::vector<TensorInfo>& mine = needs[static_cast<size_t>(Me())];
    const bool same = mine.size() == table.tensors.size() &&
                      std::equal(mine.begin(), mine.end(), table.tensors.begin(),
                                 [](const TensorInfo& a, const TensorInfo& b) {
                                   return a.offset == b.offset && a.size == b.size;
                                 });
    if (!same) {
      return Status::Failed(fmt::format("{}: node {}'s part of the model is not the table it was "
                                        "given to load",
                                        path, Me()));
    }
    // Node 0's pulls, which every node works out alike: each tensor of the file, cut at chunk.
    const std::vector<TensorInfo> all = TensorsIn(model, model.sharded(), path);
    if (Me() > 0) return LayOutPacked(path, table, CutRanges(SpanRanges(all, 0), chunk_));
    TensorTable whole;
    whole.tensors = all;
    const FileSpan span = TensorSpan(whole, 1);
    LB_RETURN_IF_ERROR(Allocate(span.size(), path));
    base_ = span.begin;
    pulls_ = CutRanges(SpanRanges(all, base_), chunk_);
    ViewsIntoSpan(table, span, region_.data(), &views_);
    std::vector<uint64_t> at;
    scatter_.resize(needs.size());
    for (size_t k = 1; k < needs.size(); ++k) PackTensors(needs[k], &at, &scatter_[k]);
    return Status::Ok();
  }

  // chain under a part: a relay hands every node every byte of the file's tensors, as when each
  // needs the whole model; each keeps its part (`table`), its views into the span it relays. Its
  // bytes received over its bytes needed are N: what a relay costs a node that needs a slice.
  Status LayOutRelay(const std::string& path, const TensorTable& table) {
    TensorTable whole;
    whole.tensors = TensorsIn(*part_->model, part_->model->sharded(), path);
    LB_RETURN_IF_ERROR(LayOutWhole(path, whole));
    views_.clear();
    ViewsIntoSpan(table, TensorSpan(whole, 1), region_.data(), &views_);
    return Status::Ok();
  }

  // Every node's tensors in the file at `path` under the run's pattern. bcast's node 0 visits
  // only the files of its own part: so every part must lie in every file (tp's do), or a node
  // would wait for a file node 0 never sends.
  Status Needs(const std::string& path, std::vector<std::vector<TensorInfo>>* out) const {
    ReadPattern pattern;
    LB_RETURN_IF_ERROR(ParsePattern(part_->pattern, &pattern));
    const TensorTable& model = *part_->model;
    for (int k = 0; k < N(); ++k) {
      TensorTable part;
      LB_RETURN_IF_ERROR(PartOf(path, model, pattern, k, N(), &part));
      if (part.shards.size() != model.shards.size()) {
        return Status::Unsupported(fmt::format(
            "{}: fleet design bcast under pattern {}: node {}'s part lies in {} of the model's "
            "{} files, and node 0 sends a file's bytes only as it loads that file (use every)",
            path, part_->pattern, k, part.shards.size(), model.shards.size()));
      }
      out->push_back(TensorsIn(part, model.sharded(), path));
    }
    return Status::Ok();
  }

  // This node's part packed into its buffer: pulled by ranged GETs of its own ranges (every,
  // stripe), or taken from node 0, the pieces of its ranges that each of node 0's `chunks` holds.
  Status LayOutPacked(const std::string& path, const TensorTable& table,
                      const std::vector<Placed>& chunks) {
    std::vector<uint64_t> at;
    std::vector<Placed> ranges;
    const uint64_t size = PackTensors(table.tensors, &at, &ranges);
    LB_RETURN_IF_ERROR(Allocate(size, path));
    for (size_t i = 0; i < table.tensors.size(); ++i) {
      views_.emplace_back(region_.data() + at[i], table.tensors[i].size);
    }
    if (design_ != "bcast") {
      pulls_ = CutRanges(ranges, chunk_);
      return Status::Ok();
    }
    for (const Placed& c : chunks) {
      for (const Placed& p : RangesWithin(ranges, c.file, c.file + c.len)) {
        expected_.push_back({{p.at, p.len}, 0});
      }
    }
    std::sort(expected_.begin(), expected_.end(),
              [](const Expect& a, const Expect& b) { return a.at.offset < b.at.offset; });
    return Status::Ok();
  }

  // Whom this node sends to and who sends to it.
  MeshPlan Plan() const {
    MeshPlan plan{.port = port_, .to = {}, .from = {}, .connect_s = kConnectS};
    const bool relay = design_ == "chain";
    if (design_ == "every" || N() == 1 || (part_ && design_ != "bcast" && !relay)) return plan;
    if (part_ && !relay) {  // bcast's scatter: node 0 sends, the others receive
      for (int j = 1; j < N() && Me() == 0; ++j) plan.to.push_back(j);
      if (Me() > 0) plan.from.push_back(0);
      return plan;
    }
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

  // Whether this node still needs the piece `c` from node `from`: exactly one of the pieces it
  // takes from its peers, from the node that sends it that piece, and not in yet.
  std::string Claim(int from, const Chunk& c) {
    const auto it =
        std::lower_bound(expected_.begin(), expected_.end(), c.offset,
                         [](const Expect& e, uint64_t offset) { return e.at.offset < offset; });
    if (it == expected_.end() || it->at.offset != c.offset || it->at.len != c.len) {
      return fmt::format("not one of the {} pieces node {} takes from its peers", expected_.size(),
                         Me());
    }
    if (it->from != from) return fmt::format("those come from node {}", it->from);
    std::lock_guard<std::mutex> lock(mu_);
    const auto i = static_cast<size_t>(it - expected_.begin());
    if (claimed_[i]) return "they are in already";
    claimed_[i] = true;
    return "";
  }

  Status OpenMesh() {
    const MeshPlan plan = Plan();
    expects_peers_ = !plan.from.empty();
    claimed_.assign(expected_.size(), false);
    want_ = RangeBytes(pulls_);
    for (const Expect& e : expected_) want_ += e.at.len;
    if (plan.to.empty() && plan.from.empty()) return Status::Ok();
    return mesh_.Open(
        place_, plan, region_.data(), region_.size(),
        [this](int from, const Chunk& c) { return Claim(from, c); },
        [this](const Chunk& c) {
          Landed({base_ + c.offset, c.len, c.offset}, false);
        });
  }

  // A piece in place: passed on as the design says, then counted. A piece from a peer under a
  // part has no file offset that matters: it is passed on to no one.
  void Landed(const Placed& p, bool from_store) {
    if (part_ && design_ != "chain") {
      if (from_store) Scatter(p);
    } else {
      Forward(p, from_store);
    }
    std::lock_guard<std::mutex> lock(mu_);
    have_ += p.len;
    cv_.notify_all();
  }

  // Replicated: chain passes every chunk on, bcast's owner of a chunk passes it to the rest, a
  // pipelined stripe sends each of its chunks to every other node as it lands.
  void Forward(const Placed& p, bool from_store) {
    const Chunk c{p.at, p.len};
    const size_t index = p.at / chunk_;
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
    if (design_ == "stripe" && stripe_ == "pipelined" && from_store) SendToOthers(c);
  }

  void SendToOthers(const Chunk& c) {
    for (int j = 0; j < N(); ++j) {
      if (j != Me()) mesh_.Send(j, c);
    }
  }

  // bcast under a part, node 0: each other node's pieces of what just landed, to that node, at
  // their place in its buffer.
  void Scatter(const Placed& p) {
    for (size_t k = 1; k < scatter_.size(); ++k) {
      for (const Placed& q : RangesWithin(scatter_[k], p.file, p.file + p.len)) {
        mesh_.Send(static_cast<int>(k), p.at + (q.file - p.file), {q.at, q.len});
      }
    }
  }

  // The store's pieces this node pulls, each passed on as it lands; a phased stripe's sent once
  // all are in.
  Status Pull(const std::string& path, uint64_t file_size) {
    if (pulls_.empty()) return Status::Ok();
    std::vector<RemoteObject> objects(1);
    ObjectHead head;
    LB_RETURN_IF_ERROR(Open(path, file_size, &objects[0], &head));
    const std::vector<std::string> etags = {head.etag};
    size_t next = 0;
    const RangeRunner runner{objects, etags, concurrency_, Timeouts{}, &stats_};
    LB_RETURN_IF_ERROR(runner.Run(
        [&](RangeRequest* r) {
          if (next == pulls_.size()) return false;
          const Placed& p = pulls_[next++];
          *r = {0, p.file, p.len, region_.data() + p.at};
          return true;
        },
        [&](const RangeRequest& r) {
          Landed({r.offset, r.len, static_cast<uint64_t>(r.dst - region_.data())}, true);
          return Status::Ok();
        }));
    if (!part_ && design_ == "stripe" && stripe_ == "phased" && N() > 1) {
      for (const Placed& p : pulls_) SendToOthers({p.at, p.len});
    }
    return Status::Ok();
  }

  // Until every byte this node needs has landed; or a connection failed, or every node that
  // sends to this one closed with bytes still missing.
  Status WaitForAll() {
    std::unique_lock<std::mutex> lock(mu_);
    while (have_ < want_) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      if (have_ >= want_) break;
      lock.unlock();
      const std::string why = mesh_.error();
      const bool closed = expects_peers_ && !mesh_.receiving();
      lock.lock();
      if (!why.empty()) return Status::IOError(fmt::format("fleet node {}: {}", Me(), why));
      if (closed && have_ < want_) {
        return Status::IOError(
            fmt::format("fleet node {}: every node that sends to it closed with {} of {} bytes in",
                        Me(), have_, want_));
      }
    }
    return Status::Ok();
  }

  std::string design_, stripe_;
  uint64_t chunk_;
  int concurrency_, port_;
  std::optional<PartPlace> part_;  // a reader of a part (SetPart); none: of the whole model
  PeerPlace place_;
  uint64_t base_ = 0;                         // the file offset at the buffer's start (a span)
  std::vector<Placed> pulls_;                 // what this node pulls from the store, in order
  std::vector<Expect> expected_;              // what it takes from its peers, by offset
  std::vector<std::vector<Placed>> scatter_;  // bcast's node 0 under a part: node k's ranges
  std::vector<TensorBytes> views_;            // its tensors, in its table's order
  PeerMesh mesh_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t have_ = 0, want_ = 0;
  std::vector<bool> claimed_;   // per expected piece: taken from a peer (guarded by mu_)
  bool expects_peers_ = false;  // some node sends to this one
  Clock::time_point start_;
  double ready_s_ = 0, connect_s_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "fleet",
    .summary = "the run's readers as nodes loading one model (or each its part, as the run's "
               "pattern says): every, bcast, stripe or chain",
    .options =
        {{"design",
          OptionSpec::Kind::kChoice,
          "every",
          "every node from the store, or node 0 broadcasts, stripes all-gathered, a chain",
          {"every", "bcast", "stripe", "chain"}},
         {"stripe",
          OptionSpec::Kind::kChoice,
          "phased",
          "design stripe: a node sends its stripe once all of it is in (phased) or each chunk as "
          "it lands (pipelined)",
          {"phased", "pipelined"}},
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
