#include "loaders/blocks/chunk_reads.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include <fmt/format.h>

namespace loadbench {
namespace {

uint64_t RoundUp(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }

// The chunks of shard k, in file order.
void AppendChunks(const std::vector<SpanShard>& shards, size_t k, uint64_t chunk,
                  std::vector<ShardChunk>* out) {
  const FileSpan& span = shards[k].span;
  for (uint64_t at = span.begin; at < span.end; at += chunk) {
    out->push_back({k, at, std::min(chunk, span.end - at)});
  }
}

}  // namespace

ChunkFit FitChunks(const BlockLimits& limits, uint64_t page, uint64_t align, uint64_t chunk,
                   unsigned threads) {
  ChunkFit f{.chunk = chunk, .threads = threads};
  if (!limits.found() || page == 0 || align == 0 || chunk == 0) return f;
  const uint64_t sectors = limits.max_sectors_kb * 1024;
  uint64_t piece = page;
  if (limits.max_segment_size > 0) piece = std::min(piece, limits.max_segment_size);
  // Plain pages are each a segment, in step with the request; a larger piece may be crossed.
  const uint64_t pieces =
      piece > 4096 ? std::max<uint64_t>(1, limits.max_segments - 1) : limits.max_segments;
  const uint64_t gathered = pieces * piece;
  const uint64_t unit = std::max(align, limits.logical_block_size);
  const uint64_t request = std::min(sectors, gathered) / unit * unit;
  if (request == 0) return f;
  const uint64_t in_flight = chunk * threads;
  f.fitted = true;
  f.request = request;
  f.limited_by = gathered < sectors ? "max_segments" : "max_sectors_kb";
  // A chunk of one request at most is never cut; a larger one is made whole requests.
  if (chunk > request) f.chunk = std::max<uint64_t>(1, (chunk + request / 2) / request) * request;
  const uint64_t needed = (in_flight + f.chunk / 2) / f.chunk;  // the nearest whole number
  f.threads = static_cast<unsigned>(std::max<uint64_t>(threads, std::min<uint64_t>(needed, 256)));
  return f;
}

void PlaceShard(const TensorTable& table, uint64_t align, SpanShard* s, uint64_t* total) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = s->first; i < s->first + s->count; ++i) {
    const TensorInfo& t = table.tensors[i];
    if (t.size == 0) continue;
    lo = std::min(lo, t.offset);
    hi = std::max(hi, t.offset + t.size);
  }
  s->span = hi == 0 ? FileSpan{} : FileSpan{lo / align * align, RoundUp(hi, align)};
  s->dst_offset = RoundUp(*total, align);
  *total = s->dst_offset + s->span.size();
}

std::vector<ShardChunk> ChunkQueue(const std::vector<SpanShard>& shards, uint64_t chunk,
                                   bool interleave) {
  std::vector<ShardChunk> queue;
  if (!interleave) {
    for (size_t k = 0; k < shards.size(); ++k) AppendChunks(shards, k, chunk, &queue);
    return queue;
  }
  std::vector<std::vector<ShardChunk>> per(shards.size());
  size_t rounds = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    AppendChunks(shards, k, chunk, &per[k]);
    rounds = std::max(rounds, per[k].size());
  }
  for (size_t r = 0; r < rounds; ++r) {
    for (const auto& chunks : per) {
      if (r < chunks.size()) queue.push_back(chunks[r]);
    }
  }
  return queue;
}

Status ReadChunk(const std::vector<SpanShard>& shards, const ShardChunk& c, std::byte* region) {
  const SpanShard& s = shards[c.shard];
  const uint64_t expected = c.offset >= s.file_size ? 0 : std::min(c.len, s.file_size - c.offset);
  std::byte* dst = region + s.dst_offset + (c.offset - s.span.begin);
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
      return Status::BadInput(fmt::format("{}: truncated: the file ends at {}, expected {}", s.path,
                                          c.offset + done, s.file_size));
    }
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

void ShardViews(const TensorTable& table, const std::vector<SpanShard>& shards,
                const std::byte* region, std::vector<TensorBytes>* views) {
  for (const SpanShard& s : shards) {
    const std::byte* base = region + s.dst_offset;
    for (size_t i = s.first; i < s.first + s.count; ++i) {
      const TensorInfo& t = table.tensors[i];
      // An empty tensor may sit outside the span; it gets an empty view at the span's start.
      views->emplace_back(t.size == 0 ? base : base + (t.offset - s.span.begin), t.size);
    }
  }
}

Status ReaderThreads::Run(unsigned n, const std::function<Status(unsigned)>& work) {
  started_ = n;
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

}  // namespace loadbench
