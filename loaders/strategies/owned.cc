// owned: the suite's own design for a copy of a model in memory the process owns (what PyTorch
// tensors, a pinned buffer for a GPU or a copy that outlives the file need), put together from
// what the measurements of the copying strategies say matters on a VM:
//   - the destination in huge pages (`buffer=thp`, MADV_HUGEPAGE; `hugetlb` when reserved), so
//     that a 2 GiB model pays 1,024 first touches instead of 524,288;
//   - those first touches made by threads of their own (`faulters`) with MADV_POPULATE_WRITE,
//     `block` bytes at a time, ahead of the reads and overlapped with them (`populate=ahead`); a
//     read that overtakes them faults its own pages rather than wait;
//   - O_DIRECT reads (`direct`) of `chunk` bytes straight into the destination, `threads` of
//     them in flight, over every shard of the model in one queue; with `fit=device` (the
//     default) the chunk is a whole number of the largest requests the device's queue takes
//     (loaders/base/block_limits.h, FitChunks), so that no read ends in a short request, and
//     the threads keep about as many bytes in flight as `chunk` x `threads` asked;
//   - optionally the destination locked (`lock=on`: mlock2 MLOCK_ONFAULT, pinned as it faults);
//   - every tensor's view handed out as its bytes arrive (`handout=arrival`): Load returns once
//     the reads are under way, and the consumer waits (Arrived) only for the tensor it uses
//     next, so that its work overlaps the reads, as a mapping's consumer overlaps read-ahead.
// A remote model (`via=http`, `via=s3`) lands in the same destination, populated the same way:
// ranged GETs of `chunk` bytes, `concurrency` in flight, each written straight into its place.
#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "loaders/base/block_limits.h"
#include "loaders/base/file_io.h"
#include "loaders/blocks/chunk_reads.h"
#include "loaders/blocks/fault_ahead.h"
#include "loaders/blocks/prefix.h"
#include "loaders/format/model.h"
#include "loaders/remote/ranges.h"
#include "loaders/remote/url.h"
#include "loaders/strategy/strategy.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif

namespace loadbench {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kHugePage = 2ull << 20;  // a segment's most in huge pages (a bvec per page)

// Whether most of the file is in the page cache already: mincore of 16 pages spread over a
// mapping of it (which reads nothing). A warm file is then copied from the cache, where O_DIRECT
// would read the device again.
bool LooksCached(const ShardFile& s) {
  constexpr uint64_t kSamples = 16;
  if (s.file_size < kPage) return false;
  void* map = ::mmap(nullptr, s.file_size, PROT_READ, MAP_SHARED, s.fd.get(), 0);
  if (map == MAP_FAILED) return false;
  uint64_t cached = 0;
  for (uint64_t i = 0; i < kSamples; ++i) {
    unsigned char in = 0;
    const uint64_t at = s.file_size / kSamples * i / kPage * kPage;
    if (::mincore(static_cast<std::byte*>(map) + at, 1, &in) == 0 && (in & 1)) ++cached;
  }
  ::munmap(map, s.file_size);
  return cached * 4 >= kSamples * 3;
}

class OwnedLoader final : public Loader {
 public:
  explicit OwnedLoader(const Params& params)
      : threads_(static_cast<unsigned>(params.Int("threads"))),
        chunk_(params.Bytes("chunk")),
        fit_device_(params.Choice("fit") == "device"),
        direct_(params.Choice("direct")),
        populate_(params.Choice("populate")),
        faulters_(static_cast<unsigned>(params.Int("faulters"))),
        block_(params.Bytes("block")),
        lock_(params.On("lock")),
        handout_arrival_(params.Choice("handout") == "arrival"),
        concurrency_(static_cast<int>(params.Int("concurrency"))),
        kind_(BufferKindOf(params)) {}

  ~OwnedLoader() override {
    if (reader_.joinable()) reader_.join();
  }

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    if (chunk_ % kPage != 0) {
      return Status::BadInput(fmt::format(
          "{}: owned: chunk must be a multiple of 4096 (the O_DIRECT alignment), got {}", path,
          chunk_));
    }
    const bool remote = IsRemote(path);
    LB_RETURN_IF_ERROR(remote ? OpenObjects(path, table) : OpenFiles(path, table));
    LB_RETURN_IF_ERROR(Destination(path));
    Parts(table, remote);
    reader_ = std::thread([this, remote] {
      Status st = remote ? Fetch() : Read();
      if (Status f = faults_.Finish(); st.ok()) st = f;
      if (!st.ok()) arrivals_.Fail(st);
    });
    ShardViews(table, shards_, region_.data(), views);
    return handout_arrival_ ? Status::Ok() : AllArrived();
  }

  Status Arrived(size_t i) override { return arrivals_.WaitFor(need_[i]); }
  Status AllArrived() override { return arrivals_.WaitFor(SIZE_MAX); }

  // The figures of the whole load: asked before the reads ended, it waits for them.
  nlohmann::json Details() const override {
    if (reader_.joinable()) reader_.join();
    nlohmann::json d = {{"threads", workers_.started()},
                        {"chunk", chunk_},
                        {"fit", fit_},
                        {"chunks", chunks_.load()},
                        {"direct_files", direct_files_},
                        {"populate", populate_},
                        {"populate_method", populate_ == "none" ? "" : faults_.method()},
                        {"populate_s", faults_.busy_s()},
                        {"populate_wait_s", faults_.waited_s()},
                        {"locked", locked_},
                        {"handout", handout_arrival_ ? "arrival" : "end"},
                        {"consumer_wait_s", arrivals_.waited_s()}};
    if (stats_.requests > 0) d.update(stats_.ToJson());
    return d;
  }

 private:
  // Every shard opened, with O_DIRECT where `direct` asks for it (auto: where its file system
  // takes it and the file is not in the page cache already), and placed in the region at the
  // alignment its reads need.
  Status OpenFiles(const std::string& path, const TensorTable& table) {
    const std::vector<ShardInfo> infos = ShardsOf(path, table);
    shards_.resize(infos.size());
    uint64_t total = 0, align = kPage;
    int direct_fd = -1;  // the first shard read with O_DIRECT: its device sizes the reads
    for (size_t k = 0; k < infos.size(); ++k) {
      SpanShard& s = shards_[k];
      LB_RETURN_IF_ERROR(OpenShardFile(infos[k], 0, &s));
      const bool direct = direct_ == "on" || (direct_ == "auto" && !LooksCached(s));
      if (direct) {
        Status st = OpenShardFile(infos[k], O_DIRECT, &s);
        if (st.code() == Status::Code::kUnsupported && direct_ == "auto") {
          st = OpenShardFile(infos[k], 0, &s);
        } else if (st.ok()) {
          ++direct_files_;
          if (direct_fd < 0) direct_fd = s.fd.get();
        }
        LB_RETURN_IF_ERROR(st);
      }
      const uint64_t a = std::max(kPage, DirectIoAlignment(s.fd.get()));
      if (chunk_ % a != 0) {
        return Status::BadInput(fmt::format(
            "{}: owned: chunk must be a multiple of the {}-byte O_DIRECT alignment, got {}", s.path,
            a, chunk_));
      }
      align = std::max(align, a);
      PlaceShard(table, a, &s, &total);
    }
    bytes_ = total;
    Fit(direct_fd, align);
    return Status::Ok();
  }

  // With fit=device, chunk_ and threads_ sized to the queue limits of the device of the first
  // shard read with O_DIRECT (FitChunks); as given where there is none, where its limits are
  // not found, and with fit=off. What was chosen, and why, goes in fit_ (details' `fit`).
  void Fit(int direct_fd, uint64_t align) {
    fit_ = {{"mode", fit_device_ ? "device" : "off"}};
    if (!fit_device_) {
      fit_["why"] = "fit=off: chunk and threads as given";
      return;
    }
    if (direct_fd < 0) {
      fit_["why"] = "no O_DIRECT reads (read-ahead or the page cache makes the requests): "
                    "chunk and threads as given";
      return;
    }
    const BlockLimits l = BlockLimitsOfFile(direct_fd);
    const uint64_t page = kind_ == BufferKind::kMalloc ? kPage : kHugePage;
    const ChunkFit f = FitChunks(l, page, align, chunk_, threads_);
    if (!f.fitted) {
      fit_["why"] = "no block device queue limits (overlay, tmpfs, fuse, NFS, ...): chunk and "
                    "threads as given";
      return;
    }
    fit_.update({{"device", l.device},
                 {"max_sectors_kb", l.max_sectors_kb},
                 {"max_hw_sectors_kb", l.max_hw_sectors_kb},
                 {"max_segments", l.max_segments},
                 {"max_segment_size", l.max_segment_size},
                 {"logical_block_size", l.logical_block_size},
                 {"page", page},
                 {"request", f.request},
                 {"limited_by", f.limited_by}});
    const std::string each =
        f.chunk <= f.request
            ? fmt::format("each read one request of {} KiB, as asked", f.chunk / 1024)
            : fmt::format("each read {} of them, {} KiB", f.chunk / f.request, f.chunk / 1024);
    fit_["why"] = fmt::format(
        "{}: requests of at most {} KiB ({}, {} pages); {}; {} threads keep {} KiB in flight "
        "({} KiB x {} asked)",
        l.device, f.request / 1024, f.limited_by, page == kPage ? "4 KiB" : "huge", each, f.threads,
        f.chunk * f.threads / 1024, chunk_ / 1024, threads_);
    chunk_ = f.chunk;
    threads_ = f.threads;
  }

  // Every shard's object HEADed (its size checked against the table's) and placed.
  Status OpenObjects(const std::string& path, const TensorTable& table) {
    const std::vector<ShardInfo> infos = ShardsOf(path, table);
    shards_.resize(infos.size());
    objects_.resize(infos.size());
    uint64_t total = 0;
    for (size_t k = 0; k < infos.size(); ++k) {
      ObjectHead head;
      LB_RETURN_IF_ERROR(
          OpenObject(infos[k].path, infos[k].file_size, &objects_[k], &head, &stats_));
      etags_.push_back(head.etag);
      SpanShard& s = shards_[k];
      s.path = infos[k].path, s.file_size = infos[k].file_size;
      s.first = infos[k].first_tensor, s.count = infos[k].tensor_count;
      PlaceShard(table, kPage, &s, &total);
    }
    bytes_ = total;
    fit_ = {{"mode", fit_device_ ? "device" : "off"},
            {"why", "remote: ranged GETs of chunk bytes, concurrency in flight"}};
    return Status::Ok();
  }

  // The region, locked if asked, and its population started (and, with populate=before,
  // finished) before the first byte is read into it.
  Status Destination(const std::string& path) {
    LB_RETURN_IF_ERROR(Region::Allocate(kind_, bytes_, path, &region_));
    if (lock_) {
      if (::mlock2(region_.data(), bytes_, MLOCK_ONFAULT) != 0) {
        return Status::OfErrno(Status::Code::kUnsupported,
                               fmt::format("{}: owned: lock=on: mlock2 of {} bytes refused", path,
                                           bytes_),
                               errno, "; RLIMIT_MEMLOCK or root needed");
      }
      locked_ = true;
    }
    if (populate_ == "none") return Status::Ok();
    faults_.Start(region_.data(), bytes_, block_, faulters_, path);
    return populate_ == "before" ? faults_.WaitFor(bytes_) : Status::Ok();
  }

  // The parts the reads come in (the local chunks, or the remote ranges), in the order of
  // their place in the region, and how many of them tensor i needs: those that start below its
  // end.
  void Parts(const TensorTable& table, bool remote) {
    if (remote) {
      for (size_t k = 0; k < shards_.size(); ++k) {
        const SpanShard& s = shards_[k];
        const uint64_t end = std::min(s.span.end, s.file_size);
        for (const RangeRequest& r :
             ChunkRange(k, s.span.begin, end, chunk_, region_.data() + s.dst_offset)) {
          ranges_.push_back(r);
        }
      }
    } else {
      queue_ = ChunkQueue(shards_, chunk_, false);
    }
    for (const RangeRequest& r : ranges_) starts_.push_back(Dst(r));
    for (const ShardChunk& c : queue_) starts_.push_back(Dst(c));
    arrivals_.Reset(starts_.size());
    need_.assign(table.tensors.size(), 0);
    for (const SpanShard& s : shards_) {
      for (size_t i = s.first; i < s.first + s.count; ++i) {
        const TensorInfo& t = table.tensors[i];
        if (t.size == 0) continue;
        const uint64_t end = s.dst_offset + (t.offset + t.size - s.span.begin);
        need_[i] = static_cast<size_t>(std::lower_bound(starts_.begin(), starts_.end(), end) -
                                       starts_.begin());
      }
    }
  }

  // Where a part's bytes start in the region.
  uint64_t Dst(const ShardChunk& c) const {
    const SpanShard& s = shards_[c.shard];
    return s.dst_offset + (c.offset - s.span.begin);
  }
  uint64_t Dst(const RangeRequest& r) const {
    return static_cast<uint64_t>(r.dst - region_.data());
  }

  // Local shards: `threads` threads take chunks in file order, each waiting only until the
  // block its bytes land in is populated.
  Status Read() {
    if (queue_.empty()) return Status::Ok();
    std::atomic<size_t> next{0};
    const auto n = static_cast<unsigned>(std::min<size_t>(threads_, queue_.size()));
    return workers_.Run(n, [&](unsigned) {
      while (!workers_.stopped()) {
        const size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= queue_.size()) break;
        LB_RETURN_IF_ERROR(Ready(Dst(queue_[i]) + queue_[i].len));
        LB_RETURN_IF_ERROR(ReadChunk(shards_, queue_[i], region_.data()));
        chunks_.fetch_add(1, std::memory_order_relaxed);
        arrivals_.Done(i);
      }
      return Status::Ok();
    });
  }

  // Remote shards: ranged GETs, `concurrency` in flight, each handed out once its block is
  // populated.
  Status Fetch() {
    size_t next = 0;
    Status waiting;
    const RangeRunner runner{objects_, etags_, concurrency_, Timeouts{}, &stats_};
    LB_RETURN_IF_ERROR(runner.Run(
        [&](RangeRequest* r) {
          if (next == ranges_.size() || !waiting.ok()) return false;
          *r = ranges_[next++];
          waiting = Ready(Dst(*r) + r->len);
          return waiting.ok();
        },
        [&](const RangeRequest& r) {
          chunks_.fetch_add(1, std::memory_order_relaxed);
          arrivals_.Done(static_cast<size_t>(
              std::lower_bound(starts_.begin(), starts_.end(), Dst(r)) - starts_.begin()));
          return Status::Ok();
        }));
    return waiting;
  }

  // Waits until the destination below `end` may be read into. With populate=ahead, a read waits
  // for the first block (by then the faulters know how they populate), and after it only where
  // they write to every page (a kernel before 5.14), which must not land on bytes already read:
  // with MADV_POPULATE_WRITE a read that runs ahead of the faulters faults its pages in itself,
  // beside them, instead of waiting for one thread's first touches, which on a VM whose memory
  // went back to the host cost up to 1.6 s for 512 MiB (docs/strategies.md, owned).
  Status Ready(uint64_t end) {
    if (populate_ != "ahead") return Status::Ok();
    LB_RETURN_IF_ERROR(faults_.WaitFor(1));
    return faults_.method() == "touch" ? faults_.WaitFor(end) : Status::Ok();
  }

  unsigned threads_;  // as given, until Fit sizes it to the device
  uint64_t chunk_;    // likewise
  const bool fit_device_;
  const std::string direct_, populate_;
  const unsigned faulters_;
  const uint64_t block_;
  const bool lock_;
  const bool handout_arrival_;
  const int concurrency_;
  const BufferKind kind_;

  std::vector<SpanShard> shards_;
  std::vector<ShardChunk> queue_;      // local shards: the chunks, in file order
  std::vector<RangeRequest> ranges_;   // remote shards: the ranges, in file order
  std::vector<uint64_t> starts_;       // each part's place in the region, ascending
  std::vector<size_t> need_;           // per tensor, the parts its bytes are in: [0, need)
  Prefix arrivals_;                    // the parts in place
  mutable std::thread reader_;         // the reads, after Load returned
  std::vector<RemoteObject> objects_;  // remote shards only
  std::vector<std::string> etags_;
  uint64_t bytes_ = 0;
  Region region_;  // every shard's span, each at its dst_offset; the views point into it
  FaultAhead faults_;
  ReaderThreads workers_;
  std::atomic<uint64_t> chunks_{0};
  TransferStats stats_;
  uint64_t direct_files_ = 0;
  bool locked_ = false;
  nlohmann::json fit_ = nlohmann::json::object();  // what Fit chose, and why
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "owned",
    .summary = "the suite's own copy into owned memory: huge pages faulted in by threads ahead "
               "of O_DIRECT reads (or ranged GETs) straight into them",
    .options =
        {{"threads",
          OptionSpec::Kind::kInt,
          "4",
          "reads in flight (reader threads); with fit=device, raised where the fitted chunk is "
          "so much smaller that chunk x threads would fall short",
          {},
          1,
          256},
         {"chunk", OptionSpec::Kind::kBytes, "4MiB",
          "bytes per read or ranged GET (a multiple of 4096); with fit=device, the target the "
          "device's whole requests are fitted to"},
         {"fit",
          OptionSpec::Kind::kChoice,
          "device",
          "device (an O_DIRECT chunk larger than the device queue's largest request made a "
          "whole number of them, threads raised to keep about chunk x threads in flight; as "
          "given where no queue limits are found) or off (chunk and threads as given)",
          {"device", "off"}},
         {"direct",
          OptionSpec::Kind::kChoice,
          "auto",
          "O_DIRECT: on, off, or auto (where the file system takes it and the file is not in "
          "the page cache already)",
          {"on", "off", "auto"}},
         {"populate",
          OptionSpec::Kind::kChoice,
          "ahead",
          "the destination's first touches: ahead (threads of their own, overlapped with the "
          "reads), before (all of it before the first read) or none (the reads fault it in)",
          {"ahead", "before", "none"}},
         {"faulters", OptionSpec::Kind::kInt, "1", "threads populating the destination", {}, 1, 64},
         {"block", OptionSpec::Kind::kBytes, "2MiB",
          "bytes populated at a time (one madvise, which holds the process's mmap lock: every "
          "mmap, munmap and thread start of the process waits for it)"},
         {"lock", OptionSpec::Kind::kChoice, "off",
          "mlock2(MLOCK_ONFAULT) the destination: pinned as it is populated", kOnOff},
         {"concurrency", OptionSpec::Kind::kInt, "8", "remote: ranged GETs in flight", {}, 1, 256},
         {"handout",
          OptionSpec::Kind::kChoice,
          "arrival",
          "when the views are handed out: arrival (each tensor's as its bytes arrive; Load "
          "returns once the reads are under way) or end (Load returns with every byte in place)",
          {"arrival", "end"}},
         BufferOption("thp")},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<OwnedLoader>(p);
    },
    .flags = kAllocates | kThreads | kDirectIO | kModel | kBothPlaces,
}));

}  // namespace loadbench
