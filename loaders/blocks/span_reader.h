// The read loop that pread_mt and odirect share: T threads, each reading one contiguous slice of
// a file range in chunk-sized preads, straight into the destination (as fio's psync engine with
// numjobs and offset_increment does). Kept apart so that the two strategies differ only in how
// the file is opened and how the range is aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/blocks/destination.h"

namespace loadbench {

struct SpanRead {
  int fd = -1;
  std::string path;          // for messages
  FileSpan span;             // the file range to read; span.begin and chunk obey any alignment
  uint64_t file_size = 0;    // reads stop here; a read that ends short only here is expected
  std::byte* dst = nullptr;  // receives span.size() bytes; dst[0] is the byte at span.begin
  unsigned threads = 1;
  uint64_t chunk = 1 << 20;
  uint64_t slice_align = 4096;  // slice starts are multiples of this
};

// Reads the span; on failure returns the first error any thread met (the others stop early).
Status ReadSpan(const SpanRead& r);

// How a span strategy (pread_mt, odirect) reads: its threads and chunk, the alignment of the span
// and of the slices, and the kind of memory it reads into.
struct SpanLoad {
  unsigned threads = 1;
  uint64_t chunk = 1 << 20;
  uint64_t align = 4096;        // the span is widened to multiples of this
  uint64_t slice_align = 4096;  // slice starts are multiples of this
  BufferKind kind = BufferKind::kMalloc;
};

// The `threads`, `chunk` and `buffer` options of a span strategy; the alignments at their
// defaults (4096).
SpanLoad SpanLoadOf(const Params& params);

// A span strategy's load: the tensors' span of the open file `fd` into a fresh `region`, and one
// view per tensor into it.
Status LoadSpan(int fd, const std::string& path, const TensorTable& table, const SpanLoad& how,
                Region* region, std::vector<TensorBytes>* views);

}  // namespace loadbench
