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
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/blocks/chunk_reads.h"
#include "loaders/format/model.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

constexpr uint64_t kPage = 4096;

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
    for (SpanShard& s : shards_) {
      const uint64_t align = direct_ ? DirectIoAlignment(s.fd.get()) : kPage;
      if (direct_ && chunk_ % align != 0) {
        // Rounding would run a different benchmark from the one the results say was run.
        return Status::BadInput(
            fmt::format("{}: pool: direct=on needs chunk to be a multiple of the {}-byte O_DIRECT "
                        "alignment, got {}",
                        s.path, align, chunk_));
      }
      PlaceShard(table, align, &s, &total);
    }
    LB_RETURN_IF_ERROR(Region::Allocate(kind_, total, path, &region_));
    LB_RETURN_IF_ERROR(split_files_ ? ReadByFile() : ReadByChunk());
    ShardViews(table, shards_, region_.data(), views);
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    return {{"threads", workers_.started()},
            {"chunks", chunks_read_.load()},
            {"files_per_thread", files_per_thread_}};
  }

 private:
  void NoteFiles(uint64_t files) {
    std::lock_guard<std::mutex> lock(mu_);
    files_per_thread_ = std::max(files_per_thread_, files);
  }

  // split=chunks: one queue of every shard's chunks; each thread takes the next one.
  Status ReadByChunk() {
    const std::vector<ShardChunk> queue = ChunkQueue(shards_, chunk_, interleave_);
    if (queue.empty()) return Status::Ok();
    std::atomic<size_t> next{0};
    const auto n = static_cast<unsigned>(std::min<size_t>(threads_, queue.size()));
    return workers_.Run(n, [&](unsigned) {
      std::vector<bool> seen(shards_.size());
      uint64_t files = 0;
      Status st;
      while (!workers_.stopped()) {
        const size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= queue.size()) break;
        st = ReadChunk(shards_, queue[i], region_.data());
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
    const std::vector<ShardChunk> queue = ChunkQueue(shards_, chunk_, false);
    return workers_.Run(n, [&](unsigned i) {
      uint64_t files = 0;
      for (size_t k = i; k < shards_.size(); k += n) {
        ++files;
        for (const ShardChunk& c : queue) {
          if (c.shard != k) continue;
          if (workers_.stopped()) break;
          LB_RETURN_IF_ERROR(ReadChunk(shards_, c, region_.data()));
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
  std::vector<SpanShard> shards_;

  ReaderThreads workers_;
  std::mutex mu_;
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
