// http_stream: ranged GETs as http_ranges makes them (`chunk` bytes, `concurrency` in flight),
// with the tensors handed to the consumer group by group (a layer at a time, in table order) as
// soon as a group has arrived, and its memory released before requests for later groups are
// made past `memory_limit`: Run:ai Model Streamer's limited mode. Time to the last tensor is the
// load's wall time; peak RSS stays within the limit plus the group being filled. The consumer
// runs between transfers, on the one thread that drives them.
#include <algorithm>
#include <chrono>
#include <deque>

#include <fmt/format.h>

#include "loaders/blocks/destination.h"
#include "loaders/format/model.h"
#include "loaders/remote/ranges.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

class HttpStreamLoader final : public Loader {
 public:
  explicit HttpStreamLoader(const Params& p)
      : chunk_(p.Bytes("chunk")),
        concurrency_(static_cast<int>(p.Int("concurrency"))),
        limit_(p.Bytes("memory_limit")),
        kind_(BufferKindOf(p)) {}

  Status Load(const std::string& path, const TensorTable&, std::vector<TensorBytes>*) override {
    return Status::Unsupported(fmt::format(
        "{}: http_stream hands out one group at a time (LoadGroups); it never holds every tensor",
        path));
  }

  Status LoadGroups(const std::string& path, const TensorTable& table,
                    const std::vector<TensorGroup>& groups, const GroupUse& use) override;

  nlohmann::json Details() const override {
    nlohmann::json d = stats_.ToJson();
    d["memory_limit_bytes"] = limit_;
    d["peak_buffered_bytes"] = peak_;
    d["groups"] = groups_done_;
    return d;
  }
  std::vector<TimeSpan> released() const override { return released_; }

 private:
  // A group being filled or waiting for its consumer: its buffer holds its ranges one after
  // another.
  struct Filling {
    size_t group = 0;
    uint64_t bytes = 0;  // the group's bytes (the buffer may be rounded up)
    Region buffer;
    std::deque<RangeRequest> to_ask;
    size_t pending = 0;  // requests asked, not yet arrived
  };

  Status OpenObjects(const std::string& path, const TensorTable& table);
  Status StartGroup(const std::string& path, const TensorGroup& g, size_t n);
  bool Next(const std::vector<TensorGroup>& groups, const std::string& path, RangeRequest* r,
            Status* error);
  Status Consume(const TensorTable& table, const std::vector<TensorGroup>& groups,
                 const GroupUse& use);

  uint64_t chunk_;
  int concurrency_;
  uint64_t limit_;
  BufferKind kind_;
  std::vector<RemoteObject> objects_;
  std::vector<std::string> etags_;
  std::deque<Filling> filling_;  // in group order: the front is the next to consume
  size_t next_group_ = 0;
  uint64_t buffered_ = 0, peak_ = 0;
  size_t groups_done_ = 0;
  TransferStats stats_;
  std::vector<TimeSpan> released_;
};

Status HttpStreamLoader::OpenObjects(const std::string& path, const TensorTable& table) {
  for (const ShardInfo& s : ShardsOf(path, table)) {
    objects_.emplace_back();
    ObjectHead head;
    LB_RETURN_IF_ERROR(OpenObject(s.path, s.file_size, &objects_.back(), &head, &stats_));
    etags_.push_back(head.etag);
  }
  return Status::Ok();
}

uint64_t GroupBytes(const TensorGroup& g) {
  uint64_t n = 0;
  for (const ShardRange& r : g.ranges) n += r.end - r.begin;
  return n;
}

Status HttpStreamLoader::StartGroup(const std::string& path, const TensorGroup& g, size_t n) {
  Filling f;
  f.group = n;
  f.bytes = GroupBytes(g);
  LB_RETURN_IF_ERROR(Region::Allocate(kind_, f.bytes, path, &f.buffer));
  uint64_t at = 0;
  for (const ShardRange& r : g.ranges) {
    for (const RangeRequest& q :
         ChunkRange(r.shard, r.begin, r.end, chunk_, f.buffer.data() + at)) {
      f.to_ask.push_back(q);
    }
    at += r.end - r.begin;
  }
  buffered_ += f.bytes;
  peak_ = std::max(peak_, buffered_);
  filling_.push_back(std::move(f));
  return Status::Ok();
}

// The next request to make: the filling groups' in order, then a new group's while the bytes
// buffered leave room for it under the limit (a group larger than the limit is still read, alone).
bool HttpStreamLoader::Next(const std::vector<TensorGroup>& groups, const std::string& path,
                            RangeRequest* r, Status* error) {
  if (!error->ok()) return false;
  for (Filling& f : filling_) {
    if (f.to_ask.empty()) continue;
    *r = f.to_ask.front();
    f.to_ask.pop_front();
    ++f.pending;
    return true;
  }
  while (next_group_ < groups.size()) {
    const uint64_t bytes = GroupBytes(groups[next_group_]);
    if (!filling_.empty() && buffered_ + bytes > limit_) return false;
    *error = StartGroup(path, groups[next_group_], next_group_);
    ++next_group_;
    if (!error->ok()) return false;
    if (!filling_.back().to_ask.empty()) return Next(groups, path, r, error);
  }
  return false;
}

// Every group at the front that has arrived whole, handed to the consumer and released.
Status HttpStreamLoader::Consume(const TensorTable& table, const std::vector<TensorGroup>& groups,
                                 const GroupUse& use) {
  while (!filling_.empty() && filling_.front().to_ask.empty() && filling_.front().pending == 0) {
    Filling& f = filling_.front();
    const TensorGroup& g = groups[f.group];
    std::vector<TensorBytes> views;
    for (size_t i : g.tensors) {
      const TensorInfo& t = table.tensors[i];
      uint64_t at = 0;
      for (const ShardRange& r : g.ranges) {
        if (r.shard == t.shard) break;
        at += r.end - r.begin;
      }
      const ShardRange& mine =
          *std::find_if(g.ranges.begin(), g.ranges.end(),
                        [&](const ShardRange& r) { return r.shard == t.shard; });
      views.emplace_back(f.buffer.data() + at + (t.offset - mine.begin), t.size);
    }
    LB_RETURN_IF_ERROR(use(g, views));
    const Clock::time_point begin = Clock::now();
    buffered_ -= f.bytes;
    filling_.pop_front();
    released_.push_back({begin, Clock::now()});
    ++groups_done_;
  }
  return Status::Ok();
}

Status HttpStreamLoader::LoadGroups(const std::string& path, const TensorTable& table,
                                    const std::vector<TensorGroup>& groups, const GroupUse& use) {
  LB_RETURN_IF_ERROR(OpenObjects(path, table));
  Status error = Status::Ok();
  const RangeRunner runner{objects_, etags_, concurrency_, Timeouts{}, &stats_};
  LB_RETURN_IF_ERROR(runner.Run([&](RangeRequest* r) { return Next(groups, path, r, &error); },
                                [&](const RangeRequest& r) {
                                  for (Filling& f : filling_) {
                                    const std::byte* b = f.buffer.data();
                                    if (r.dst >= b && r.dst < b + f.bytes) --f.pending;
                                  }
                                  return Consume(table, groups, use);
                                }));
  LB_RETURN_IF_ERROR(error);
  // Groups with no bytes at the end (never asked for) are handed out too.
  while (next_group_ < groups.size()) {
    LB_RETURN_IF_ERROR(StartGroup(path, groups[next_group_], next_group_));
    ++next_group_;
  }
  return Consume(table, groups, use);
}

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "http_stream",
    .summary = "ranged GETs as http_ranges, tensors handed out group by group under a memory limit",
    .options =
        {{"chunk", OptionSpec::Kind::kBytes, "8MiB", "bytes per ranged GET"},
         {"concurrency", OptionSpec::Kind::kInt, "8", "requests in flight", {}, 1, 256},
         {"memory_limit", OptionSpec::Kind::kBytes, "1GiB",
          "bytes of groups held at once (arrived or arriving); a larger group is read alone"},
         BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<HttpStreamLoader>(p);
    },
    .flags = kAllocates | kStreams | kModel | kRemote,
}));

}  // namespace loadbench
