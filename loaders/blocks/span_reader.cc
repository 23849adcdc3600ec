#include "loaders/blocks/span_reader.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace loadbench {
namespace {

// One slice: [begin, end) of the file, clipped to the file's end for the expected byte count.
Status ReadSlice(const SpanRead& r, uint64_t begin, uint64_t end, const std::atomic<bool>& stop) {
  for (uint64_t off = begin; off < end && !stop.load(std::memory_order_relaxed);) {
    const uint64_t len = std::min(r.chunk, end - off);
    // Bytes that exist: a direct read of a whole aligned chunk returns short at end of file.
    const uint64_t expected = off >= r.file_size ? 0 : std::min(len, r.file_size - off);
    std::byte* dst = r.dst + (off - r.span.begin);
    uint64_t done = 0;
    while (done < expected) {
      const ssize_t n = ::pread(r.fd, dst + done, len - done, static_cast<off_t>(off + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(fmt::format("{}: read at offset {}", r.path, off + done), errno);
      }
      if (n == 0) {
        return Status::BadInput(fmt::format("{}: truncated: file ends at {}, expected {}", r.path,
                                            off + done, r.file_size));
      }
      done += static_cast<uint64_t>(n);
    }
    off += len;
  }
  return Status::Ok();
}

}  // namespace

Status ReadSpan(const SpanRead& r) {
  if (r.span.size() == 0) return Status::Ok();
  const std::vector<Slice> slices = SplitIntoSlices(r.span.size(), r.threads, r.slice_align);
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status first = Status::Ok();
  auto work = [&](const Slice& s) {
    Status st = ReadSlice(r, r.span.begin + s.offset, r.span.begin + s.offset + s.length, stop);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (first.ok()) first = st;
      stop.store(true, std::memory_order_relaxed);
    }
  };
  if (slices.size() == 1) {
    work(slices[0]);
    return first;
  }
  std::vector<std::thread> pool;
  pool.reserve(slices.size());
  for (const Slice& s : slices) pool.emplace_back(work, s);
  for (auto& t : pool) t.join();
  return first;
}

SpanLoad SpanLoadOf(const Params& params) {
  return {.threads = static_cast<unsigned>(params.Int("threads")),
          .chunk = params.Bytes("chunk"),
          .kind = BufferKindOf(params)};
}

Status LoadSpan(int fd, const std::string& path, const TensorTable& table, const SpanLoad& how,
                Region* region, std::vector<TensorBytes>* views) {
  const FileSpan span = TensorSpan(table, how.align);
  LB_RETURN_IF_ERROR(Region::Allocate(how.kind, span.size(), path, region));
  LB_RETURN_IF_ERROR(ReadSpan({.fd = fd,
                               .path = path,
                               .span = span,
                               .file_size = table.file_size,
                               .dst = region->data(),
                               .threads = how.threads,
                               .chunk = how.chunk,
                               .slice_align = how.slice_align}));
  ViewsIntoSpan(table, span, region->data(), views);
  return Status::Ok();
}

}  // namespace loadbench
