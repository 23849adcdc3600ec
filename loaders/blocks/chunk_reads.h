// What the strategies that cut every shard of a model into chunks, each read straight into its
// place in one region (pool, owned), share: each shard's span and its place in the region, the
// queue of chunks, one chunk's read, the views, and the threads that take the chunks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "loaders/base/block_limits.h"
#include "loaders/blocks/destination.h"
#include "loaders/blocks/shards.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {

// One file of the model as a chunked reader holds it.
struct SpanShard : ShardFile {
  FileSpan span;            // its tensors' bytes, widened to the alignment
  uint64_t dst_offset = 0;  // where span.begin lands in the region; a multiple of the alignment
};

// One read: file bytes [offset, offset + len) of shard `shard`.
struct ShardChunk {
  size_t shard;
  uint64_t offset;
  uint64_t len;
};

// How O_DIRECT reads are sized to the device's queue (owned's `fit=device`). The block layer cuts
// a read into requests of at most max_sectors_kb, each gathering at most max_segments pieces of
// memory (a 4 KiB page each in plain memory, up to a huge page, or max_segment_size, in huge
// pages); a chunk that is not a whole number of such requests leaves a short one at its end, and
// where the device is limited by operations per second every request counts alike.
struct ChunkFit {
  bool fitted = false;   // false: no limits known (or none usable): chunk and threads as asked
  uint64_t request = 0;  // the largest request the device takes from this memory, in bytes
  const char* limited_by = "";  // "max_sectors_kb" or "max_segments"
  uint64_t chunk = 0;           // bytes per read
  unsigned threads = 0;         // reads in flight
};

// The chunk and threads for reads into memory of `page`-byte pages (2 MiB for huge pages, 4096
// for plain ones) at `align` (the O_DIRECT alignment), from the asked `chunk` and `threads`
// (targets): the request is the smaller of max_sectors_kb and what max_segments gather (a huge
// page's segments one fewer, for a request that crosses a page's end), rounded down to `align`;
// a chunk larger than one request becomes the whole number of requests nearest it (one asked
// no larger is never cut, and stays); the threads are the whole number nearest to keeping as
// many bytes in flight as chunk x threads asked, never fewer than asked nor more than 256 (so
// they rise only where the chunk shrank by more than half a chunk's worth over all threads).
// Without limits found (or none usable): fitted false, chunk and threads as asked.
ChunkFit FitChunks(const BlockLimits& limits, uint64_t page, uint64_t align, uint64_t chunk,
                   unsigned threads);

// Sets s's span (its tensors' bytes widened to multiples of `align`; empty without any) and
// places it in the region after `*total` bytes, at the next multiple of `align`; `*total`
// becomes the region's size so far.
void PlaceShard(const TensorTable& table, uint64_t align, SpanShard* s, uint64_t* total);

// Every shard's chunks of at most `chunk` bytes: all of shard 0 in file order, then shard 1,
// ...; with `interleave`, chunk 0 of every shard, then chunk 1, ...
std::vector<ShardChunk> ChunkQueue(const std::vector<SpanShard>& shards, uint64_t chunk,
                                   bool interleave);

// Reads chunk c into its place in `region`. Only the bytes before the file's end must arrive:
// the span may reach past it by less than the alignment, and an O_DIRECT read of a whole
// aligned chunk returns short there.
Status ReadChunk(const std::vector<SpanShard>& shards, const ShardChunk& c, std::byte* region);

// One view per tensor of every shard, in table order, into `region`.
void ShardViews(const TensorTable& table, const std::vector<SpanShard>& shards,
                const std::byte* region, std::vector<TensorBytes>* views);

// Runs work(i) on n threads (on this one when n is 1) and returns the first error any met;
// after it, stopped() is true, for the others to stop at their next chunk.
class ReaderThreads final {
 public:
  Status Run(unsigned n, const std::function<Status(unsigned)>& work);
  bool stopped() const { return stop_.load(std::memory_order_relaxed); }
  unsigned started() const { return started_; }

 private:
  std::mutex mu_;
  std::atomic<bool> stop_{false};
  Status first_error_;
  unsigned started_ = 0;
};

}  // namespace loadbench
