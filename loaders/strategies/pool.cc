// A pool of T reader threads taking fixed-size chunks from one queue that spans every shard of
// the model (parallel within a file and across files), each chunk preaded (or read with
// O_DIRECT) straight into one region that holds every shard's tensor span. This is how today's
// serving stacks read safetensors shards:
//   Run:ai Model Streamer      pool:threads=16:chunk=2MiB   (its defaults: one CPU buffer)
//   safetensors prefetch plan  pool:threads=8:chunk=16MiB
//   fastsafetensors (no GDS)   pool:threads=16   (direct=on for its O_DIRECT mode)
// `order` says how the queue walks the shards (all of a file, or one chunk of each in turn) and
// `split=files` gives each thread whole files instead (one file per thread, as loaders that
// hand each worker a shard do).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/blocks/shards.h"
#include "loaders/format/model.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t RoundUp(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }

// One file of the model as this strategy reads it.
struct Shard : ShardFile {  // its fd opened once, shared by every thread
  FileSpan span;            // its tensors' bytes, widened to the alignment
  uint64_t dst_offset = 0;  // where span.begin lands in the region; a multiple of the alignment
};

// One read of the queue: file bytes [offset, offset + len) of shard `shard`.
struct Chunk {
  size_t shard;
  uint64_t offset;
  uint64_t len;
};

class PoolLoader final : public Loader {
 public:
  explicit PoolLoader(const Params& params)
      : threads_(static_cast<unsigned>(params.Int("threads"))),
        chunk_(params.Bytes("chunk")),
        direct_(params.On("direct")),
        interleave_(params.Choice("order") == "interleave"),
        split_files_(params.Choice("split") == "files"),
        kind_(BufferKindOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    LB_RETURN_IF_ERROR(OpenShards(path, table, direct_ ? O_DIRECT : 0, &shards_));
    uint64_t total = 0;
    for (Shard& s : shards_) {
      const uint64_t align = direct_ ? DirectIoAlignment(s.fd.get()) : kPage;
      if (direct_ && chunk_ % align != 0) {
        // Rounding would run a different benchmark from the one the results say was run.
        return Status::BadInput(
            fmt::format("{}: pool: direct=on needs chunk to be a multiple of the {}-byte O_DIRECT "
                        "alignment, got {}",
                        s.path, align, chunk_));
      }
      s.span = ShardSpan(table, s, align);
      s.dst_offset = RoundUp(total, align);
      total = s.dst_offset + s.span.size();
    }
    LB_RETURN_IF_ERROR(Region::Allocate(kind_, total, path, &region_));
    LB_RETURN_IF_ERROR(split_files_ ? ReadByFile() : ReadByChunk());
    for (const Shard& s : shards_) {
      std::byte* base = region_.data() + s.dst_offset;
      for (size_t i = s.first; i < s.first + s.count; ++i) {
        const TensorInfo& t = table.tensors[i];
        // An empty tensor may sit outside the span; it gets an empty view at the span's start.
        views->emplace_back(t.size == 0 ? base : base + (t.offset - s.span.begin), t.size);
      }
    }
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    return {{"threads", threads_started_},
            {"chunks", chunks_read_.load()},
            {"files_per_thread", files_per_thread_}};
  }

 private:
  // The bytes of the shard's tensors, widened to multiples of `align`; empty without any.
  static FileSpan ShardSpan(const TensorTable& table, const Shard& s, uint64_t align) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = s.first; i < s.first + s.count; ++i) {
      const TensorInfo& t = table.tensors[i];
      if (t.size == 0) continue;
      lo = std::min(lo, t.offset);
      hi = std::max(hi, t.offset + t.size);
    }
    if (hi == 0) return {};
    return {lo / align * align, RoundUp(hi, align)};
  }

  // Reads one chunk into its place in the region. Only the bytes before the file's end must
  // arrive: the span may reach past it by less than the alignment, and an O_DIRECT read of a
  // whole aligned chunk returns short there.
  Status ReadChunk(const Chunk& c) const {
    const Shard& s = shards_[c.shard];
    const uint64_t expected = c.offset >= s.file_size ? 0 : std::min(c.len, s.file_size - c.offset);
    std::byte* dst = region_.data() + s.dst_offset + (c.offset - s.span.begin);
    uint64_t done = 0;
    while (done < expected) {
      const ssize_t n =
          ::pread(s.fd.get(), dst + done, c.len - done, static_cast<off_t>(c.offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(fmt::format("{}: read of {} bytes at offset {}", s.path,
                                             c.len - done, c.offset + done),
                                 errno);
      }
      if (n == 0) {
        return Status::BadInput(fmt::format("{}: truncated: the file ends at {}, expected {}",
                                            s.path, c.offset + done, s.file_size));
      }
      done += static_cast<uint64_t>(n);
    }
    return Status::Ok();
  }

  // The chunks of shard k, in file order.
  void AppendChunks(size_t k, std::vector<Chunk>* out) const {
    const FileSpan& span = shards_[k].span;
    for (uint64_t at = span.begin; at < span.end; at += chunk_) {
      out->push_back({k, at, std::min(chunk_, span.end - at)});
    }
  }

  // Runs `work(i)` on n threads (on this one when n is 1) and returns the first error any
  // met; after it the others stop at their next chunk.
  Status RunThreads(unsigned n, const std::function<Status(unsigned)>& work) {
    threads_started_ = n;
    auto body = [&](unsigned i) {
      Status st = work(i);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (first_error_.ok()) first_error_ = st;
        stop_.store(true, std::memory_order_relaxed);
      }
    };
    if (n == 1) {
      body(0);
    } else {
      std::vector<std::thread> pool;
      pool.reserve(n);
      for (unsigned i = 0; i < n; ++i) pool.emplace_back(body, i);
      for (auto& t : pool) t.join();
    }
    return first_error_;
  }

  void NoteFiles(uint64_t files) {
    std::lock_guard<std::mutex> lock(mu_);
    files_per_thread_ = std::max(files_per_thread_, files);
  }

  // split=chunks: one queue of every shard's chunks; each thread takes the next one.
  Status ReadByChunk() {
    std::vector<Chunk> queue;
    if (!interleave_) {
      for (size_t k = 0; k < shards_.size(); ++k) AppendChunks(k, &queue);
    } else {
      std::vector<std::vector<Chunk>> per(shards_.size());
      size_t rounds = 0;
      for (size_t k = 0; k < shards_.size(); ++k) {
        AppendChunks(k, &per[k]);
        rounds = std::max(rounds, per[k].size());
      }
      for (size_t r = 0; r < rounds; ++r) {
        for (const auto& chunks : per) {
          if (r < chunks.size()) queue.push_back(chunks[r]);
        }
      }
    }
    if (queue.empty()) return Status::Ok();
    std::atomic<size_t> next{0};
    const auto n = static_cast<unsigned>(std::min<size_t>(threads_, queue.size()));
    return RunThreads(n, [&](unsigned) {
      std::vector<bool> seen(shards_.size());
      uint64_t files = 0;
      Status st;
      while (!stop_.load(std::memory_order_relaxed)) {
        const size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= queue.size()) break;
        st = ReadChunk(queue[i]);
        if (!st.ok()) break;
        chunks_read_.fetch_add(1, std::memory_order_relaxed);
        if (!seen[queue[i].shard]) {
          seen[queue[i].shard] = true;
          ++files;
        }
      }
      NoteFiles(files);
      return st;
    });
  }

  // split=files: thread i reads whole shards i, i + T, ..., each in file order.
  Status ReadByFile() {
    const auto n = static_cast<unsigned>(std::min<size_t>(threads_, shards_.size()));
    return RunThreads(n, [&](unsigned i) {
      uint64_t files = 0;
      for (size_t k = i; k < shards_.size(); k += n) {
        std::vector<Chunk> chunks;
        AppendChunks(k, &chunks);
        ++files;
        for (const Chunk& c : chunks) {
          if (stop_.load(std::memory_order_relaxed)) break;
          LB_RETURN_IF_ERROR(ReadChunk(c));
          chunks_read_.fetch_add(1, std::memory_order_relaxed);
        }
      }
      NoteFiles(files);
      return Status::Ok();
    });
  }

  const unsigned threads_;
  const uint64_t chunk_;
  const bool direct_;
  const bool interleave_;
  const bool split_files_;
  const BufferKind kind_;
  Region region_;  // every shard's span, each at its dst_offset; the views point into it
  std::vector<Shard> shards_;

  std::mutex mu_;
  std::atomic<bool> stop_{false};
  Status first_error_;
  unsigned threads_started_ = 0;
  std::atomic<uint64_t> chunks_read_{0};
  uint64_t files_per_thread_ = 0;  // the most files one thread read from
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "pool",
    .summary = "T threads take chunks from one queue over every shard, pread (or O_DIRECT) "
               "into one buffer",
    .options = {{"threads", OptionSpec::Kind::kInt, "16", "reader threads", {}, 1, 1024},
                {"chunk", OptionSpec::Kind::kBytes, "2MiB",
                 "bytes per read (a multiple of 4096 with direct=on)"},
                {"direct", OptionSpec::Kind::kChoice, "off",
                 "open every shard with O_DIRECT, bypassing the page cache", kOnOff},
                {"order",
                 OptionSpec::Kind::kChoice,
                 "file",
                 "the queue: file (every chunk of shard 0, then shard 1, ...) or interleave "
                 "(chunk 0 of every shard, then chunk 1, ...)",
                 {"file", "interleave"}},
                {"split",
                 OptionSpec::Kind::kChoice,
                 "chunks",
                 "chunks (any thread takes any chunk) or files (thread i reads whole shards i, "
                 "i+T, ...)",
                 {"chunks", "files"}},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<PoolLoader>(p);
    },
    .flags = kEager | kAllocates | kThreads | kDirectIO | kModel,
}));

}  // namespace loadbench
