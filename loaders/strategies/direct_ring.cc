// O_DIRECT reads through io_uring into a ring of K aligned windows, never through the page
// cache: each shard's tensor span is read window by window, `depth` reads in flight, and as each
// window completes its pieces of tensors are copied into their own buffers while the next
// windows are being read. This is the staging-ring loader of today's direct-I/O stacks:
//   InstantTensor            direct_ring            (the defaults, 4 windows of 16 MiB; it
//                                                    reads with libaio, for the GPU)
//   llama.cpp --direct-io    direct_ring:windows=4:window=64MiB  (4 staging buffers of 64 MiB;
//                                                    it preads, one read per buffer at a time)
// The cost it shows beside odirect and io_uring:direct=on, which read straight into the
// destination, is one extra copy of every byte through a ring that stays hot in the caches.
#include <fcntl.h>
#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/base/io_ring.h"
#include "loaders/blocks/destination.h"
#include "loaders/blocks/ring_reads.h"
#include "loaders/blocks/shards.h"
#include "loaders/format/model.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

constexpr uint64_t kPage = 4096;
// A read returns at most 2 GiB - 4 KiB; a window is read by one request.
constexpr uint64_t kMaxWindow = 1ull << 30;

uint64_t RoundUp(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }

// One file of the model as this strategy reads it.
struct Shard : ShardFile {
  uint64_t align = kPage;  // its O_DIRECT alignment
  FileSpan span;           // its tensors' bytes, widened to the alignment
  // Its non-empty tensors by file offset (indices into `order_`/`max_end_` of the loader):
  // [sorted_begin, sorted_end).
  size_t sorted_begin = 0;
  size_t sorted_end = 0;
};

class DirectRingLoader final : public Loader, private RingReads {
 public:
  explicit DirectRingLoader(const Params& params)
      : windows_(static_cast<unsigned>(params.Int("windows"))),
        window_(params.Bytes("window")),
        depth_(params.Int("depth") == 0 ? windows_ : static_cast<unsigned>(params.Int("depth"))),
        kind_(BufferKindOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    // Rounding would run a different benchmark from the one the results say was run.
    if (window_ % kPage != 0 || window_ > kMaxWindow) {
      return Status::BadInput(fmt::format(
          "{}: direct_ring: window must be a multiple of {} bytes, at most 1 GiB; got {}", path,
          kPage, window_));
    }
    if (depth_ > windows_) {
      return Status::BadInput(fmt::format(
          "{}: direct_ring: depth={} exceeds windows={}: every read in flight needs a window", path,
          depth_, windows_));
    }
    table_ = &table;
    LB_RETURN_IF_ERROR(PrepareShards(path, table));
    LB_RETURN_IF_ERROR(buffers_.Allocate(kind_, table, path));
    uint64_t span_bytes = 0;
    for (const Shard& s : shards_) span_bytes += s.span.size();
    if (span_bytes > 0) {
      // The ring is staging memory, not the destination: plain aligned pages whatever
      // `buffer` says.
      LB_RETURN_IF_ERROR(
          Region::Allocate(BufferKind::kMalloc, uint64_t{windows_} * window_, path, &ring_));
      IoRing ring;
      if (const int ret = ring.Init(depth_); ret < 0) {
        return Status::Unsupported(fmt::format("{}: {}", path, RingSetupFailure(-ret)));
      }
      LB_RETURN_IF_ERROR(ReadWalk(ring.get()));
    }
    for (size_t i = 0; i < table.tensors.size(); ++i) {
      views->emplace_back(buffers_.at(i), table.tensors[i].size);
    }
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    return {{"windows", windows_},
            {"depth", depth_},  // the reads in flight it used (the option's 0: windows)
            {"window_bytes", window_},
            {"ring_bytes", ring_.size()}};
  }

 private:
  // One window's read in flight: file bytes [offset, offset + len) of `shard` into buf, the
  // part still missing of the window [win_begin, win_end) held by slot `slot` of the ring.
  struct Request {
    size_t shard = 0;
    uint64_t win_begin = 0;
    uint64_t win_end = 0;
    uint64_t offset = 0;
    std::byte* buf = nullptr;
    unsigned len = 0;
  };

  // Every shard, opened once with O_DIRECT; its span and its tensors in file order. A single
  // file is the model of one shard at `path`.
  Status PrepareShards(const std::string& path, const TensorTable& table) {
    LB_RETURN_IF_ERROR(OpenShards(path, table, O_DIRECT, &shards_));
    for (Shard& s : shards_) {
      s.align = DirectIoAlignment(s.fd.get());
      if (window_ % s.align != 0) {
        return Status::BadInput(fmt::format(
            "{}: direct_ring: window={} is not a multiple of the {}-byte O_DIRECT alignment",
            s.path, window_, s.align));
      }
      s.sorted_begin = order_.size();
      uint64_t lo = UINT64_MAX, hi = 0;
      for (size_t i = s.first; i < s.first + s.count; ++i) {
        const TensorInfo& t = table.tensors[i];
        if (t.size == 0) continue;
        order_.push_back(i);
        lo = std::min(lo, t.offset);
        hi = std::max(hi, t.offset + t.size);
      }
      s.sorted_end = order_.size();
      s.span = hi == 0 ? FileSpan{} : FileSpan{lo / s.align * s.align, RoundUp(hi, s.align)};
      const auto first = order_.begin() + static_cast<ptrdiff_t>(s.sorted_begin);
      const auto last = order_.begin() + static_cast<ptrdiff_t>(s.sorted_end);
      std::stable_sort(first, last, [&](size_t a, size_t b) {
        return table.tensors[a].offset < table.tensors[b].offset;
      });
      // max_end_[j]: the furthest end of the shard's tensors up to j in file order, so that a
      // binary search finds the first that can reach into a window even if tensors overlap.
      uint64_t furthest = 0;
      for (size_t j = s.sorted_begin; j < s.sorted_end; ++j) {
        const TensorInfo& t = table.tensors[order_[j]];
        furthest = std::max(furthest, t.offset + t.size);
        max_end_.push_back(furthest);
      }
    }
    return Status::Ok();
  }

  // Copies every piece of a tensor that the completed window [wb, we) of shard k holds from
  // its slot into the tensor's buffer.
  void CopyOut(const Shard& s, uint64_t wb, uint64_t we, const std::byte* window) {
    const auto ends = max_end_.begin();
    const auto offsets_first = order_.begin() + static_cast<ptrdiff_t>(s.sorted_begin);
    const auto offsets_last = order_.begin() + static_cast<ptrdiff_t>(s.sorted_end);
    // The tensors starting before the window's end, from the first whose reach passes wb.
    const auto hi = std::partition_point(offsets_first, offsets_last,
                                         [&](size_t i) { return table_->tensors[i].offset < we; });
    auto j = static_cast<size_t>(std::partition_point(ends + static_cast<ptrdiff_t>(s.sorted_begin),
                                                      ends + static_cast<ptrdiff_t>(s.sorted_end),
                                                      [&](uint64_t end) { return end <= wb; }) -
                                 ends);
    for (; j < static_cast<size_t>(hi - order_.begin()); ++j) {
      const size_t i = order_[j];
      const TensorInfo& t = table_->tensors[i];
      const uint64_t lo = std::max(t.offset, wb);
      const uint64_t up = std::min(t.offset + t.size, we);
      if (lo >= up) continue;
      std::memcpy(buffers_.at(i) + (lo - t.offset), window + (lo - wb), up - lo);
    }
  }

  void Queue(io_uring* ring, size_t slot) {
    const Request& r = requests_[slot];
    io_uring_sqe* sqe = ::io_uring_get_sqe(ring);
    ::io_uring_prep_read(sqe, shards_[r.shard].fd.get(), r.buf, r.len, r.offset);
    ::io_uring_sqe_set_data64(sqe, slot);
    Prepared();
  }

  // Queues window number next_window_ of the walk (shard by shard, each span window by
  // window) into its slot of the ring. False when every window has been queued.
  bool QueueNext(io_uring* ring) {
    while (next_shard_ < shards_.size() && next_ >= shards_[next_shard_].span.end) {
      if (++next_shard_ < shards_.size()) next_ = shards_[next_shard_].span.begin;
    }
    if (next_shard_ >= shards_.size()) return false;
    const Shard& s = shards_[next_shard_];
    const uint64_t end = std::min(next_ + window_, s.span.end);
    const size_t slot = next_window_ % windows_;
    requests_[slot] = {next_shard_,
                       next_,
                       end,
                       next_,
                       ring_.data() + slot * window_,
                       static_cast<unsigned>(end - next_)};
    next_ = end;
    ++next_window_;
    ++reading_;
    Queue(ring, slot);
    return true;
  }

  // Copies out, in walk order, every window that has arrived, up to the first still being
  // read, freeing their slots for the windows K ahead.
  void CopyArrived() {
    while (copy_next_ < next_window_) {
      const size_t slot = copy_next_ % windows_;
      if (!arrived_[slot]) break;
      const Request& r = requests_[slot];
      const Shard& s = shards_[r.shard];
      CopyOut(s, r.win_begin, std::min(r.win_end, s.file_size), ring_.data() + slot * window_);
      arrived_[slot] = false;
      ++copy_next_;
    }
  }

  // Handles the completion of the read of `slot` with result `res`: the window arrived, the
  // rest of a short read requeued, or an error naming the file.
  Status Complete(io_uring* ring, size_t slot, int res) override {
    Request& r = requests_[slot];
    const Shard& s = shards_[r.shard];
    if (res == -EAGAIN || res == -EINTR) {
      Queue(ring, slot);
      return Status::Ok();
    }
    if (res < 0) {
      return Status::IOErrorFromErrno(
          fmt::format("{}: O_DIRECT read of {} bytes at offset {}", s.path, r.len, r.offset), -res);
    }
    // The span may reach past the file's end by less than the alignment: only the bytes before
    // it must arrive.
    const uint64_t data_end = std::min(r.win_end, s.file_size);
    const uint64_t got_to = r.offset + static_cast<uint64_t>(res);
    if (got_to >= std::min<uint64_t>(r.offset + r.len, data_end)) {
      arrived_[slot] = true;
      --reading_;
      return Status::Ok();
    }
    // An O_DIRECT read stops inside a block only at the end of the file, and the rest could
    // not be asked for anyway: its offset would be unaligned.
    if (res == 0 || static_cast<uint64_t>(res) % s.align != 0) {
      return Status::BadInput(
          fmt::format("{}: truncated: the file ends at offset {}, its tensors need it up to {}",
                      s.path, got_to, data_end));
    }
    r.offset = got_to;
    r.buf += res;
    r.len -= static_cast<unsigned>(res);
    Queue(ring, slot);
    return Status::Ok();
  }

  // The read loop. Window n of the walk goes into slot n % K once window n - K has been copied
  // out, with at most `depth` reads in flight; windows are copied out in walk order on this
  // thread as they arrive, while the later ones are being read (a window that arrives before
  // an earlier one waits in its slot). After an error nothing more is queued, but every read in
  // flight is still reaped, since the kernel may write into the ring until then.
  Status ReadWalk(io_uring* ring) {
    requests_.assign(windows_, Request{});
    arrived_.assign(windows_, false);
    next_ = shards_[0].span.begin;
    more_ = true;
    return RingReads::Run(ring, shards_[0].path);
  }

  // Up to `depth` reads in flight, into the slots whose windows have been copied out.
  void QueueMore(io_uring* ring) override {
    while (more_ && reading_ < depth_ && next_window_ < copy_next_ + windows_) {
      more_ = QueueNext(ring);
    }
  }
  void Reaped() override { CopyArrived(); }

  const unsigned windows_;
  const uint64_t window_;
  const unsigned depth_;
  const BufferKind kind_;
  TensorBuffers buffers_;  // one destination per tensor; the views point into them
  Region ring_;            // the K windows, window_ bytes each

  // State of one Load.
  const TensorTable* table_ = nullptr;
  std::vector<Shard> shards_;
  std::vector<size_t> order_;      // each shard's non-empty tensors, in file order
  std::vector<uint64_t> max_end_;  // beside order_: the furthest tensor end so far in its shard
  std::vector<Request> requests_;  // by slot (its window of the ring), the user_data of reads
  std::vector<bool> arrived_;      // by slot: its window has been read, not yet copied out
  size_t next_shard_ = 0;          // the walk: the shard and file offset of the next window
  uint64_t next_ = 0;
  uint64_t next_window_ = 0;  // windows queued so far: the number of the next one
  uint64_t copy_next_ = 0;    // windows copied out so far: the number of the next one
  unsigned reading_ = 0;      // windows queued and not yet arrived
  bool more_ = true;          // windows remain to be queued
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "direct_ring",
    .summary = "O_DIRECT io_uring reads into a ring of K windows, each copied out into the "
               "tensors' buffers as it completes",
    .options = {{"windows", OptionSpec::Kind::kInt, "4", "K: windows in the ring", {}, 1, 256},
                {"window", OptionSpec::Kind::kBytes, "16MiB",
                 "bytes per window and per read (a multiple of 4096, at most 1GiB)"},
                {"depth",
                 OptionSpec::Kind::kInt,
                 "0",
                 "reads in flight, at most `windows` (0: as many as windows)",
                 {},
                 0,
                 256},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<DirectRingLoader>(p);
    },
    .flags = kEager | kAllocates | kDirectIO | kModel,
    .unsupported_reason = IoUringUnsupportedReason,
}));

}  // namespace loadbench
