// Where a reader's tensors lie in a file and where they go in its buffer: the byte ranges a
// reader of a part of a model reads (loaders/use/part.h: under tp, its slice of every tensor),
// each with its place in the buffer, and the pieces of those ranges that a stretch of the file
// holds, as a node that pulled the stretch finds what another node needs of it (the fleet
// strategy, loaders/strategies/fleet.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "loaders/format/tensor_table.h"

namespace loadbench {

// Bytes [file, file + len) of a file, at `at` in a buffer.
struct Placed {
  uint64_t file = 0;
  uint64_t len = 0;
  uint64_t at = 0;
  bool operator==(const Placed& o) const { return file == o.file && len == o.len && at == o.at; }
};

// `tensors` (one file's) packed one after another in their order into a buffer, each one's
// offset in it in *at (one per tensor), and the file's ranges that fill it in *ranges, sorted by
// file offset: a tensor that follows the one before it both in the file and in the buffer is
// one range with it, so that a reader of slices asks for as few ranges as the slices allow.
// Empty tensors take no bytes and no range. Returns the buffer's size.
uint64_t PackTensors(const std::vector<TensorInfo>& tensors, std::vector<uint64_t>* at,
                     std::vector<Placed>* ranges);

// The ranges of `tensors` (one file's) in a buffer that holds the file from `base` on, each at
// its file offset less `base`: sorted by file offset, adjacent or overlapping ones merged.
std::vector<Placed> SpanRanges(const std::vector<TensorInfo>& tensors, uint64_t base);

// `ranges` cut into pieces of at most `chunk` bytes (0: whole), in order.
std::vector<Placed> CutRanges(const std::vector<Placed>& ranges, uint64_t chunk);

// The pieces of `ranges` (sorted by file offset, none overlapping another) that lie within
// [begin, end) of the file, in file order, each at its place in the ranges' buffer.
std::vector<Placed> RangesWithin(const std::vector<Placed>& ranges, uint64_t begin, uint64_t end);

// The bytes `ranges` cover.
uint64_t RangeBytes(const std::vector<Placed>& ranges);

}  // namespace loadbench
