// Destination memory for the strategies that copy the file into buffers of their own. The user
// picks its kind with `buffer=malloc|thp|hugetlb`: on a machine where a first-touch 4 KiB fault
// costs 10 to 20 microseconds, the kind of memory can matter more than the I/O method.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loaders/strategy/strategy.h"

namespace loadbench {

enum class BufferKind { kMalloc, kThp, kHugetlb };

// The `buffer` option every allocating strategy declares, `malloc` by default unless it says.
OptionSpec BufferOption(const std::string& by_default = "malloc");
// The kind a resolved `buffer` option names.
BufferKind BufferKindOf(const Params& params);

// One contiguous block of destination memory, aligned to at least 4096 bytes. Move-only; freed
// on destruction.
class Region final {
 public:
  Region() = default;
  Region(Region&& o) noexcept;
  Region& operator=(Region&& o) noexcept;
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region() { reset(); }

  // malloc: posix_memalign (glibc serves large blocks with fresh 4 KiB anonymous pages).
  // thp: an anonymous mapping aligned to 2 MiB with madvise(MADV_HUGEPAGE); kUnsupported when
  // transparent huge pages are disabled. hugetlb: MAP_HUGETLB rounded up to the huge page size;
  // kUnsupported, naming the shortfall, when too few huge pages are reserved. `bytes` may be 0.
  // Messages name `path`, the file being loaded.
  static Status Allocate(BufferKind kind, uint64_t bytes, const std::string& path, Region* out);

  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  void reset();

 private:
  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  void* base_ = nullptr;  // what to free or unmap
  uint64_t mapped_ = 0;   // 0: base_ came from malloc; else the length to munmap
};

// One destination per tensor. With malloc, one malloc per tensor, as a plain program does; with
// thp and hugetlb, 4 KiB-aligned slots packed into one Region, because a huge page per small
// tensor would waste most of it.
class TensorBuffers final {
 public:
  Status Allocate(BufferKind kind, const TensorTable& table, const std::string& path);
  // The destination of tensor `i` (table order), t.size bytes long; never null.
  std::byte* at(size_t i) const { return slots_[i]; }

  // Reads a tensor's bytes [at, at + len) of the file into dst.
  using ChunkRead =
      std::function<Status(const TensorInfo& t, uint64_t at, std::byte* dst, uint64_t len)>;
  // Fills every tensor's destination (after Allocate), in table order, `chunk` bytes a call of
  // `read` at the most, and adds one view per tensor to `views`.
  Status Fill(const TensorTable& table, uint64_t chunk, const ChunkRead& read,
              std::vector<TensorBytes>* views) const;

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  std::vector<std::unique_ptr<std::byte, FreeDeleter>> mallocs_;
  Region region_;
  std::vector<std::byte*> slots_;
};

// The base of the strategies that copy each tensor into a buffer of its own, in chunks (fread,
// pread): their `chunk` and `buffer` options, and the buffers.
class ChunkedCopy : public Loader {
 public:
  explicit ChunkedCopy(const Params& params)
      : chunk_bytes_(params.Bytes("chunk")), kind_(BufferKindOf(params)) {}

 protected:
  const uint64_t chunk_bytes_;
  const BufferKind kind_;
  TensorBuffers buffers_;
};

// The byte range of the file that holds every tensor, widened to multiples of `align`:
// [begin, end). Empty (begin == end) for a table without tensor bytes. `end` may pass the end
// of the file by less than `align`.
struct FileSpan {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};
FileSpan TensorSpan(const TensorTable& table, uint64_t align);

// Views of every tensor inside a buffer that holds the file bytes of `span`.
void ViewsIntoSpan(const TensorTable& table, const FileSpan& span, const std::byte* base,
                   std::vector<TensorBytes>* views);

// Splits [0, bytes) into at most `parts` contiguous slices whose starts are multiples of
// `align`, for strategies that give each thread a slice of its own (as fio's offset_increment
// does). Empty slices are left out.
struct Slice {
  uint64_t offset;
  uint64_t length;
};
std::vector<Slice> SplitIntoSlices(uint64_t bytes, unsigned parts, uint64_t align);

}  // namespace loadbench
