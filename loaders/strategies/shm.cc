// shm: the first process pread()s the file's tensor bytes into a named POSIX shared-memory
// segment (Boost.Interprocess shared_memory_object and mapped_region), and every later process
// maps that segment and reads no byte of the file, until the segment is removed. A sharded
// model has one segment holding every shard's tensor bytes, named after the model's path.
#include "loaders/strategies/shm.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <vector>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <fmt/format.h>
#include <xxhash.h>

#include "loaders/base/file_io.h"
#include "loaders/base/units.h"
#include "loaders/blocks/destination.h"
#include "loaders/format/model.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

namespace bip = boost::interprocess;

// Where shm_open keeps segments on Linux: its free space bounds what a creator may write.
constexpr char kShmDir[] = "/dev/shm";
constexpr uint64_t kSpanAlign = 4096;

using CompleteFlag = std::atomic_ref<uint32_t>;
static_assert(CompleteFlag::is_always_lock_free, "the flag is shared between processes");
static_assert(offsetof(ShmSegmentHeader, complete) % CompleteFlag::required_alignment == 0);
static_assert(sizeof(ShmSegmentHeader) <= kShmDataOffset);
static_assert(kShmDataOffset % kSpanAlign == 0, "tensors keep their alignment in the file");

struct FileIdentity {
  uint64_t dev, ino, size;
  int64_t mtime_ns;
};

FileIdentity IdentityOf(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// Device and inode, not the path: a file reached by two paths has one segment.
std::string SegmentNameOf(const FileIdentity& id) {
  const uint64_t key[2] = {id.dev, id.ino};
  return fmt::format("loadbench-{:016x}", XXH3_64bits(key, sizeof key));
}

std::string LockPathOf(const std::string& name) { return fmt::format("{}/{}.lock", kShmDir, name); }

Status RemoveSegmentNamed(const std::string& path, const std::string& name,
                          std::vector<std::string>* removed = nullptr) {
  // shared_memory_object::remove returns whether shm_unlink succeeded; errno says why not.
  errno = 0;
  if (bip::shared_memory_object::remove(name.c_str())) {
    if (removed != nullptr) {
      removed->push_back(
          fmt::format("shared-memory segment {}/{} (shm, of {})", kShmDir, name, path));
    }
  } else if (errno != ENOENT) {
    return Status::FromErrno(fmt::format("{}: removing shared-memory segment {}", path, name),
                             errno);
  }
  return Status::Ok();
}

// Serializes attach-or-create among processes loading the same file at once. The creator holds
// the lock while it fills the segment, so a second process waits and then attaches, instead of
// taking an unfinished segment for a dead creator's and making one of its own. A dead creator's
// lock is released by the kernel, and the next process finds its segment incomplete.
Status LockSegment(const std::string& path, const std::string& name, UniqueFd* lock) {
  const std::string lock_path = LockPathOf(name);
  lock->reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock->valid()) {
    return Status::FromErrno(fmt::format("{}: lock file {}", path, lock_path), errno);
  }
  while (::flock(lock->get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return Status::FromErrno(fmt::format("{}: locking {}", path, lock_path), errno);
    }
  }
  return Status::Ok();
}

// Removes a segment this process is still filling, unless it was completed: a failed creator
// must not leave one behind for the next process to find and discard.
class RemoveUnlessComplete final {
 public:
  RemoveUnlessComplete(const std::string& path, const std::string& name)
      : path_(path), name_(name) {}
  RemoveUnlessComplete(const RemoveUnlessComplete&) = delete;
  RemoveUnlessComplete& operator=(const RemoveUnlessComplete&) = delete;
  ~RemoveUnlessComplete() {
    // The load has already failed with its own error; a segment that cannot be removed now is
    // removed by the runner's cleanup before the next cold run.
    if (!complete_) (void)RemoveSegmentNamed(path_, name_);
  }
  void Completed() { complete_ = true; }

 private:
  const std::string& path_;
  const std::string& name_;
  bool complete_ = false;
};

// One file of the model as the segment holds it.
struct ShmShard {
  std::string path;
  const TensorTable* table = nullptr;  // its tensors, offsets within its file
  TensorTable own;                     // a shard's table, which `table` points to
  UniqueFd fd;
  FileIdentity id;
  FileSpan span;    // its tensor bytes, widened to kSpanAlign
  uint64_t at = 0;  // where the span starts, counted from kShmDataOffset
};

class ShmLoader final : public Loader {
 public:
  explicit ShmLoader(const Params& params) : chunk_bytes_(params.Bytes("chunk")) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    if (writable_) {
      return Status::Unsupported(fmt::format(
          "{}: shm's segment is shared with every other process loading the file; writing into "
          "it in place would change their weights (use place=separate)",
          path));
    }
    // A single file is its own shard; a sharded model's segment holds every shard's span.
    std::vector<ShmShard> shards(table.sharded() ? table.shards.size() : 1);
    uint64_t data_bytes = 0;
    for (size_t k = 0; k < shards.size(); ++k) {
      ShmShard& sh = shards[k];
      sh.path = table.sharded() ? table.shards[k].path : path;
      LB_RETURN_IF_ERROR(OpenReadOnly(sh.path, 0, &sh.fd));
      struct stat st {};
      if (::fstat(sh.fd.get(), &st) != 0) return Status::FromErrno(sh.path, errno);
      sh.id = IdentityOf(st);
      const uint64_t expected = table.sharded() ? table.shards[k].file_size : table.file_size;
      if (sh.id.size != expected) {
        return Status::BadInput(
            fmt::format("{}: file changed size since it was validated ({} -> {})", sh.path,
                        expected, sh.id.size));
      }
      if (table.sharded()) sh.own = ShardTable(table, k);
      sh.table = table.sharded() ? &sh.own : &table;
      sh.span = TensorSpan(*sh.table, kSpanAlign);
      sh.at = data_bytes;
      data_bytes += (sh.span.size() + kSpanAlign - 1) / kSpanAlign * kSpanAlign;
    }
    // The model's own path names the segment: the file itself, or the index or first split.
    FileIdentity model = shards[0].id;
    if (table.sharded()) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(path, errno);
      model = IdentityOf(st);
      model.size = table.file_size;
    }
    segment_ = SegmentNameOf(model);
    std::vector<uint64_t> identities;
    for (const ShmShard& sh : shards) {
      identities.insert(identities.end(),
                        {sh.id.dev, sh.id.ino, sh.id.size, static_cast<uint64_t>(sh.id.mtime_ns),
                         sh.span.begin, sh.span.end, sh.at});
    }
    const ShmSegmentHeader expected{
        .magic = kShmMagic,
        .version = kShmVersion,
        .complete = 0,
        .file_dev = model.dev,
        .file_ino = model.ino,
        .file_size = model.size,
        .file_mtime_ns = model.mtime_ns,
        .span_offset = table.sharded() ? 0 : shards[0].span.begin,
        .span_size = data_bytes,
        .shards_hash = XXH3_64bits(identities.data(), identities.size() * sizeof(uint64_t)),
    };
    UniqueFd lock;  // held until the segment is attached or complete
    LB_RETURN_IF_ERROR(LockSegment(path, segment_, &lock));
    try {
      bool attached = false;
      LB_RETURN_IF_ERROR(Attach(path, expected, &attached));
      if (!attached) LB_RETURN_IF_ERROR(Create(path, expected, shards));
    } catch (const bip::interprocess_exception& e) {
      return Status::IOError(
          fmt::format("{}: shared-memory segment {}: {}", path, segment_, e.what()));
    }
    const auto* base = static_cast<const std::byte*>(region_.get_address()) + kShmDataOffset;
    for (const ShmShard& sh : shards) ViewsIntoSpan(*sh.table, sh.span, base + sh.at, views);
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    nlohmann::json d = nlohmann::json::object();
    if (!role_.empty()) d["role"] = role_;
    if (!segment_.empty()) d["segment"] = segment_;
    return d;
  }

 private:
  // Maps the segment read-only when it holds what `expected` describes (this version of every
  // file of the model, the same spans), and sets `attached`. Removes a segment that does not:
  // its creator died before completing it, or it holds another version of the model (a
  // rewrite, or a new file on a reused inode).
  Status Attach(const std::string& path, const ShmSegmentHeader& expected, bool* attached) {
    bip::shared_memory_object shm;
    try {
      shm = bip::shared_memory_object(bip::open_only, segment_.c_str(), bip::read_only);
    } catch (const bip::interprocess_exception& e) {
      if (e.get_error_code() == bip::not_found_error) return Status::Ok();
      throw;
    }
    bip::offset_t size = 0;
    if (!shm.get_size(size)) {
      return Status::IOError(
          fmt::format("{}: shared-memory segment {}: cannot read its size", path, segment_));
    }
    // A segment of another size holds another span, or its creator died before truncating it.
    if (static_cast<uint64_t>(size) == kShmDataOffset + expected.span_size) {
      bip::mapped_region region(shm, bip::read_only);
      auto* base = static_cast<std::byte*>(region.get_address());
      auto& in_place = *reinterpret_cast<ShmSegmentHeader*>(base);
      // Acquire pairs with the creator's release: once the flag reads 1, every byte is there.
      if (CompleteFlag(in_place.complete).load(std::memory_order_acquire) == 1) {
        ShmSegmentHeader h;
        std::memcpy(&h, base, sizeof h);
        const ShmSegmentHeader& e = expected;
        if (h.magic == e.magic && h.version == e.version && h.file_dev == e.file_dev &&
            h.file_ino == e.file_ino && h.file_size == e.file_size &&
            h.file_mtime_ns == e.file_mtime_ns && h.span_offset == e.span_offset &&
            h.span_size == e.span_size && h.shards_hash == e.shards_hash) {
          region_ = std::move(region);
          role_ = "attacher";
          *attached = true;
          return Status::Ok();
        }
      }
    }
    return RemoveSegmentNamed(path, segment_);
  }

  Status Create(const std::string& path, const ShmSegmentHeader& header_value,
                const std::vector<ShmShard>& shards) {
    const uint64_t bytes = kShmDataOffset + header_value.span_size;
    // Segments live in memory: one that does not fit must be refused before it eats the
    // memory the rest of the machine runs on.
    struct statvfs vfs {};
    if (::statvfs(kShmDir, &vfs) != 0) {
      return Status::FromErrno(fmt::format("{}: statvfs {}", path, kShmDir), errno);
    }
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (bytes > free_bytes) {
      return Status::Unsupported(fmt::format(
          "{}: its shared-memory segment needs {} ({} bytes), {} has only {} ({} bytes) free", path,
          FormatBytes(bytes), bytes, kShmDir, FormatBytes(free_bytes), free_bytes));
    }
    // create_only is O_EXCL: of two processes that both found no usable segment, one creates
    // it and the other fails here, instead of both writing into one segment.
    bip::shared_memory_object shm(bip::create_only, segment_.c_str(), bip::read_write);
    RemoveUnlessComplete guard(path, segment_);
    shm.truncate(static_cast<bip::offset_t>(bytes));
    // tmpfs allocates a page when it is first written, and a store into a mapping of a full
    // tmpfs raises SIGBUS; reserving every page now turns that into ENOSPC here.
    if (int err = ::posix_fallocate(shm.get_mapping_handle().handle, 0, static_cast<off_t>(bytes));
        err != 0) {
      return Status::FromErrno(fmt::format("{}: reserving {} for shared-memory segment {}", path,
                                           FormatBytes(bytes), segment_),
                               err);
    }
    bip::mapped_region region(shm, bip::read_write);
    auto* base = static_cast<std::byte*>(region.get_address());
    auto* header = new (base) ShmSegmentHeader(header_value);
    for (const ShmShard& sh : shards) {
      // The span may end past the end of the file; those bytes stay zero, as in a mapping.
      const uint64_t end = std::min(sh.span.end, sh.id.size);
      std::byte* dst = base + kShmDataOffset + sh.at;
      for (uint64_t at = sh.span.begin; at < end; at += chunk_bytes_) {
        const uint64_t n = std::min(chunk_bytes_, end - at);
        LB_RETURN_IF_ERROR(PreadExact(sh.fd.get(), sh.path, dst + (at - sh.span.begin), n, at));
      }
    }
    CompleteFlag(header->complete).store(1, std::memory_order_release);
    guard.Completed();
    region_ = std::move(region);
    role_ = "creator";
    return Status::Ok();
  }

  uint64_t chunk_bytes_;
  std::string segment_;
  std::string role_;
  bip::mapped_region region_;  // the views point into it
};

}  // namespace

Status ShmSegmentName(const std::string& path, std::string* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(path, errno);
  *out = SegmentNameOf(IdentityOf(st));
  return Status::Ok();
}

Status RemoveShmSegment(const std::string& path, std::vector<std::string>* removed) {
  std::string name;
  LB_RETURN_IF_ERROR(ShmSegmentName(path, &name));
  LB_RETURN_IF_ERROR(RemoveSegmentNamed(path, name, removed));
  // Only between runs, with no loader alive: a lock file unlinked under a waiting loader would
  // let the next one lock a new file beside it.
  if (::unlink(LockPathOf(name).c_str()) != 0 && errno != ENOENT) {
    return Status::FromErrno(fmt::format("{}: removing {}", path, LockPathOf(name)), errno);
  }
  return Status::Ok();
}

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "shm",
    .summary = "the first process preads the tensor bytes into a named POSIX shared-memory "
               "segment; later ones map it and read nothing from the file",
    .options = {{"chunk", OptionSpec::Kind::kBytes, "8MiB",
                 "size of each pread into the segment (creator only)"}},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<ShmLoader>(p);
    },
    .flags = kEager | kSharedSegment | kModel,
    .unsupported_reason =
        [] {
          struct statvfs vfs {};
          if (::statvfs(kShmDir, &vfs) != 0) {
            return fmt::format("{} is not there: POSIX shared memory needs a tmpfs mounted on it",
                               kShmDir);
          }
          return std::string();
        },
    .cleanup = [](const std::string& path,
                  std::vector<std::string>* removed) { return RemoveShmSegment(path, removed); },
}));

}  // namespace loadbench
