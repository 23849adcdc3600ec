#include "loaders/blocks/destination.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "loaders/base/proc_fields.h"

namespace loadbench {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kHugePage = 2ull << 20;

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string ReadFirstLine(const char* file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// "HugePages_Free" of /proc/meminfo, and "Hugepagesize" in bytes; 0 when absent.
uint64_t MeminfoValue(const std::string& key) { return MeminfoBytes(key).value_or(0); }

}  // namespace

OptionSpec BufferOption(const std::string& by_default) {
  return {"buffer",
          OptionSpec::Kind::kChoice,
          by_default,
          "destination memory: malloc (4 KiB pages), thp (madvise MADV_HUGEPAGE), hugetlb "
          "(MAP_HUGETLB, needs reserved huge pages)",
          {"malloc", "thp", "hugetlb"}};
}

BufferKind BufferKindOf(const Params& params) {
  const std::string& k = params.Choice("buffer");
  if (k == "thp") return BufferKind::kThp;
  if (k == "hugetlb") return BufferKind::kHugetlb;
  return BufferKind::kMalloc;
}

Region::Region(Region&& o) noexcept
    : data_(o.data_), size_(o.size_), base_(o.base_), mapped_(o.mapped_) {
  o.data_ = nullptr, o.size_ = 0, o.base_ = nullptr, o.mapped_ = 0;
}

Region& Region::operator=(Region&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_, size_ = o.size_, base_ = o.base_, mapped_ = o.mapped_;
    o.data_ = nullptr, o.size_ = 0, o.base_ = nullptr, o.mapped_ = 0;
  }
  return *this;
}

void Region::reset() {
  if (base_ != nullptr) {
    if (mapped_ != 0) {
      ::munmap(base_, mapped_);
    } else {
      std::free(base_);
    }
  }
  data_ = nullptr, size_ = 0, base_ = nullptr, mapped_ = 0;
}

Status Region::Allocate(BufferKind kind, uint64_t bytes, const std::string& path, Region* out) {
  Region r;
  r.size_ = bytes;
  const uint64_t want = std::max<uint64_t>(bytes, 1);  // a real address even for nothing
  switch (kind) {
    case BufferKind::kMalloc: {
      void* p = nullptr;
      if (int err = ::posix_memalign(&p, kPage, want); err != 0) {
        return Status::IOError(
            fmt::format("{}: out of memory for a {}-byte buffer (malloc)", path, bytes));
      }
      r.base_ = p;
      r.data_ = static_cast<std::byte*>(p);
      break;
    }
    case BufferKind::kThp: {
      const std::string mode = ReadFirstLine("/sys/kernel/mm/transparent_hugepage/enabled");
      if (mode.find("[never]") != std::string::npos) {
        return Status::Unsupported("buffer=thp: transparent huge pages are disabled "
                                   "(/sys/kernel/mm/transparent_hugepage/enabled is 'never')");
      }
      // Over-allocate by one huge page and start at the first 2 MiB boundary, so that every
      // huge page the kernel grants lies inside the region.
      const uint64_t len = RoundUp(want, kHugePage) + kHugePage;
      void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        return Status::FromErrno(fmt::format("{}: mmap of a {}-byte thp buffer", path, len), errno);
      }
      r.base_ = p;
      r.mapped_ = len;
      const uint64_t aligned = RoundUp(reinterpret_cast<uintptr_t>(p), kHugePage);
      r.data_ = reinterpret_cast<std::byte*>(aligned);
      if (::madvise(r.data_, RoundUp(want, kHugePage), MADV_HUGEPAGE) != 0) {
        return Status::FromErrno(fmt::format("{}: madvise(MADV_HUGEPAGE)", path), errno);
      }
      break;
    }
    case BufferKind::kHugetlb: {
      uint64_t huge = MeminfoValue("Hugepagesize");
      if (huge == 0) huge = kHugePage;
      const uint64_t len = RoundUp(want, huge);
      void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        if (err == ENOMEM || err == EINVAL) {
          return Status::Unsupported(
              fmt::format("buffer=hugetlb: needs {} huge pages of {} KiB, {} are free "
                          "(reserve them in /proc/sys/vm/nr_hugepages)",
                          len / huge, huge / 1024, MeminfoValue("HugePages_Free")));
        }
        return Status::FromErrno(fmt::format("{}: mmap(MAP_HUGETLB) of {} bytes", path, len), err);
      }
      r.base_ = p;
      r.mapped_ = len;
      r.data_ = static_cast<std::byte*>(p);
      break;
    }
  }
  *out = std::move(r);
  return Status::Ok();
}

void TensorBuffers::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

Status TensorBuffers::Allocate(BufferKind kind, const TensorTable& table, const std::string& path) {
  slots_.clear();
  mallocs_.clear();
  if (kind == BufferKind::kMalloc) {
    for (const auto& t : table.tensors) {
      // malloc(0) may return nullptr; one byte keeps "nullptr means out of memory" true.
      auto* p = static_cast<std::byte*>(std::malloc(t.size == 0 ? 1 : t.size));
      if (p == nullptr) {
        return Status::IOError(
            fmt::format("{}: out of memory for tensor '{}' ({} bytes)", path, t.name, t.size));
      }
      mallocs_.emplace_back(p);
      slots_.push_back(p);
    }
    return Status::Ok();
  }
  uint64_t total = 0;
  for (const auto& t : table.tensors) total += RoundUp(t.size, kPage);
  LB_RETURN_IF_ERROR(Region::Allocate(kind, total, path, &region_));
  uint64_t at = 0;
  for (const auto& t : table.tensors) {
    slots_.push_back(region_.data() + at);
    at += RoundUp(t.size, kPage);
  }
  return Status::Ok();
}

FileSpan TensorSpan(const TensorTable& table, uint64_t align) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& t : table.tensors) {
    if (t.size == 0) continue;
    lo = std::min(lo, t.offset);
    hi = std::max(hi, t.offset + t.size);
  }
  if (hi == 0) return {};
  return {lo / align * align, RoundUp(hi, align)};
}

void ViewsIntoSpan(const TensorTable& table, const FileSpan& span, const std::byte* base,
                   std::vector<TensorBytes>* views) {
  for (const auto& t : table.tensors) {
    // An empty tensor may sit outside the span; it gets an empty view at the span's start.
    views->emplace_back(t.size == 0 ? base : base + (t.offset - span.begin), t.size);
  }
}

std::vector<Slice> SplitIntoSlices(uint64_t bytes, unsigned parts, uint64_t align) {
  std::vector<Slice> out;
  if (parts == 0) parts = 1;
  const uint64_t per = RoundUp((bytes + parts - 1) / parts, align);
  for (uint64_t at = 0; at < bytes; at += per) out.push_back({at, std::min(per, bytes - at)});
  return out;
}

Status TensorBuffers::Fill(const TensorTable& table, uint64_t chunk, const ChunkRead& read,
                           std::vector<TensorBytes>* views) const {
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    const TensorInfo& t = table.tensors[i];
    std::byte* dst = at(i);
    for (uint64_t done = 0; done < t.size;) {
      const uint64_t len = std::min(chunk, t.size - done);
      LB_RETURN_IF_ERROR(read(t, t.offset + done, dst + done, len));
      done += len;
    }
    views->emplace_back(dst, t.size);
  }
  return Status::Ok();
}

}  // namespace loadbench
