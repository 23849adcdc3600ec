#include "loaders/blocks/part_ranges.h"

#include <algorithm>

namespace loadbench {
namespace {

bool ByFile(const Placed& a, const Placed& b) { return a.file < b.file; }

}  // namespace

uint64_t PackTensors(const std::vector<TensorInfo>& tensors, std::vector<uint64_t>* at,
                     std::vector<Placed>* ranges) {
  at->clear();
  ranges->clear();
  uint64_t size = 0;
  for (const TensorInfo& t : tensors) {
    at->push_back(size);
    if (t.size == 0) continue;
    Placed* last = ranges->empty() ? nullptr : &ranges->back();
    if (last != nullptr && last->file + last->len == t.offset && last->at + last->len == size) {
      last->len += t.size;
    } else {
      ranges->push_back({t.offset, t.size, size});
    }
    size += t.size;
  }
  std::sort(ranges->begin(), ranges->end(), ByFile);
  return size;
}

std::vector<Placed> SpanRanges(const std::vector<TensorInfo>& tensors, uint64_t base) {
  std::vector<Placed> sorted;
  for (const TensorInfo& t : tensors) {
    if (t.size > 0) sorted.push_back({t.offset, t.size, t.offset - base});
  }
  std::sort(sorted.begin(), sorted.end(), ByFile);
  std::vector<Placed> out;
  for (const Placed& p : sorted) {
    if (!out.empty() && p.file <= out.back().file + out.back().len) {
      Placed& last = out.back();
      last.len = std::max(last.len, p.file + p.len - last.file);
    } else {
      out.push_back(p);
    }
  }
  return out;
}

std::vector<Placed> CutRanges(const std::vector<Placed>& ranges, uint64_t chunk) {
  std::vector<Placed> out;
  for (const Placed& r : ranges) {
    const uint64_t step = chunk == 0 ? r.len : chunk;
    for (uint64_t done = 0; done < r.len; done += step) {
      out.push_back({r.file + done, std::min(step, r.len - done), r.at + done});
    }
  }
  return out;
}

std::vector<Placed> RangesWithin(const std::vector<Placed>& ranges, uint64_t begin, uint64_t end) {
  std::vector<Placed> out;
  // The first range that ends past `begin`: ranges do not overlap, so their ends rise too.
  auto it = std::upper_bound(ranges.begin(), ranges.end(), begin,
                             [](uint64_t b, const Placed& r) { return b < r.file + r.len; });
  for (; it != ranges.end() && it->file < end; ++it) {
    const uint64_t lo = std::max(begin, it->file), hi = std::min(end, it->file + it->len);
    if (lo < hi) out.push_back({lo, hi - lo, it->at + (lo - it->file)});
  }
  return out;
}

uint64_t RangeBytes(const std::vector<Placed>& ranges) {
  uint64_t n = 0;
  for (const Placed& r : ranges) n += r.len;
  return n;
}

}  // namespace loadbench
