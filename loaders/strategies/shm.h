// The shm strategy's segment: its name and layout, for the strategy and for the tests that
// inspect, damage or remove segments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

// The first bytes of a segment; the tensor bytes start at kShmDataOffset, so that every tensor
// keeps the alignment it has in its file. A sharded model has one segment: each shard's span
// of tensor bytes, one after another in shard order, each starting on a 4 KiB boundary.
struct ShmSegmentHeader {
  uint64_t magic;
  uint32_t version;
  // 0 until every byte of the span is in the segment; set last, with release order, so that an
  // attacher that reads 1 with acquire order sees the whole span. A creator that died leaves 0.
  uint32_t complete;
  // The version of the model the bytes came from: a segment of another version is never
  // served. dev, ino and mtime are those of the model's path (a single file: the file; a
  // sharded model: its index or first split), size the sum of its files' sizes.
  uint64_t file_dev;
  uint64_t file_ino;
  uint64_t file_size;
  int64_t file_mtime_ns;
  uint64_t span_offset;  // a single file: file offset of the first byte at kShmDataOffset; else 0
  uint64_t span_size;    // bytes from kShmDataOffset: every shard's span
  // xxh3-64 over every shard's device, inode, size, mtime and span: a rewrite of any shard
  // makes the segment another version's.
  uint64_t shards_hash;
};
inline constexpr uint64_t kShmMagic = 0x4745534d4853424cull;  // the bytes "LBSHMSEG"
inline constexpr uint32_t kShmVersion = 2;  // 2: shards_hash, one segment per sharded model
inline constexpr uint64_t kShmDataOffset = 4096;

// The name of the segment that holds the model at `path` (a weight file, or a sharded model's
// index or first split: the path the strategy was given): "loadbench-" and 16 hex digits of a
// hash of its device and inode, so that every path of one file finds one segment. Errors name
// the path (missing, not readable).
Status ShmSegmentName(const std::string& path, std::string* out);

// Removes the segment of the model at `path` (as ShmSegmentName names it) and its lock file
// (/dev/shm/NAME.lock, which serializes loaders that find no segment at the same time); a
// missing segment is not an error. Processes that still map it keep their mapping; the memory
// goes when the last of them unmaps it. Call it only while no loader of the model is running.
// A segment it removed is named in *removed (when given).
Status RemoveShmSegment(const std::string& path, std::vector<std::string>* removed = nullptr);

}  // namespace loadbench
