#include "harness/gen/writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "harness/process/interrupt.h"
#include "loaders/base/file_io.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr uint64_t kChunkBytes = 8ull << 20;
constexpr size_t kMaxSlots = 32;            // at most 256 MiB of chunk buffers
constexpr uint64_t kWriteBehindChunks = 4;  // chunks of dirty data allowed before waiting

// Calls fn(file_offset, length, tensor_index) for each piece of [begin, end) in order, with
// tensor_index == SIZE_MAX for padding (zero bytes).
template <typename Fn>
void ForEachSegment(const FileLayout& l, uint64_t begin, uint64_t end, Fn&& fn) {
  const auto& offs = l.tensor_offsets;
  // The first tensor whose end is past `begin`: tensors are sorted and non-overlapping.
  size_t t = static_cast<size_t>(std::upper_bound(offs.begin(), offs.end(), begin) - offs.begin());
  if (t > 0) --t;
  uint64_t cur = begin;
  while (cur < end) {
    while (t < offs.size() && offs[t] + l.tensor_sizes[t] <= cur) ++t;
    if (t >= offs.size() || offs[t] >= end) {
      fn(cur, end - cur, SIZE_MAX);
      return;
    }
    if (offs[t] > cur) {
      fn(cur, offs[t] - cur, SIZE_MAX);
      cur = offs[t];
    }
    const uint64_t seg_end = std::min(offs[t] + l.tensor_sizes[t], end);
    fn(cur, seg_end - cur, t);
    cur = seg_end;
  }
}

// Writes the data area of one file: the whole model's, or a shard's, whose tensors are the
// model's from number `first_tensor` on (their content depends on the model-wide index).
class DataWriter {
 public:
  DataWriter(const FileLayout& layout, const std::vector<WlfTensorSpec>& tensors,
             size_t first_tensor, uint64_t seed, std::endian order, int fd, const std::string& path,
             int threads, Progress* progress, uint64_t progress_base, XXH3_state_t* model_state)
      : l_(layout),
        tensors_(tensors),
        first_tensor_(first_tensor),
        seed_(seed),
        order_(order),
        fd_(fd),
        path_(path),
        progress_(progress),
        progress_base_(progress_base),
        model_state_(model_state) {
    const uint64_t data_len = l_.data_end - l_.data_offset;
    nchunks_ = (data_len + kChunkBytes - 1) / kChunkBytes;
    chunk_alloc_ =
        static_cast<size_t>(std::min<uint64_t>(kChunkBytes, (data_len + 4095) / 4096 * 4096));
    const uint64_t want_slots = 2 * static_cast<uint64_t>(threads) + 2;
    nslots_ = static_cast<size_t>(
        std::max<uint64_t>(1, std::min<uint64_t>({want_slots, kMaxSlots, nchunks_})));
    nthreads_ = static_cast<int>(std::max<uint64_t>(
        1, std::min<uint64_t>({static_cast<uint64_t>(threads), nchunks_, nslots_})));
  }

  // Writes [data_offset, data_end) and returns the xxh3-64 of the tensor bytes in `*checksum`;
  // the model's hash state, when given, is fed the same bytes.
  Status Run(uint64_t* checksum) {
    if (nchunks_ == 0) {
      *checksum = XXH3_64bits(nullptr, 0);
      return Status::Ok();
    }
    std::unique_ptr<XXH3_state_t, XxhFree> state(XXH3_createState());
    if (!state || XXH3_64bits_reset(state.get()) == XXH_ERROR) {
      return Status::IOError("xxh3: cannot create hash state");
    }
    const size_t pool_bytes = nslots_ * chunk_alloc_;
    void* mem =
        ::mmap(nullptr, pool_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return Status::FromErrno("allocating chunk buffers", errno);
    Mapping pool(mem, pool_bytes);
    ::madvise(mem, pool_bytes, MADV_HUGEPAGE);  // advice only: fewer first-touch faults
    ready_.assign(nslots_, UINT64_MAX);

    std::vector<std::thread> workers;
    Status st;
    try {
      for (int i = 0; i < nthreads_; ++i) workers.emplace_back([this, &pool] { Work(pool); });
    } catch (const std::system_error& e) {
      st = Status::IOError(fmt::format("cannot start a generator thread: {}", e.what()));
    }
    if (st.ok()) st = WriteAll(pool, state.get());
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    slot_free_.notify_all();
    for (auto& w : workers) w.join();
    if (!st.ok()) return st;
    *checksum = XXH3_64bits_digest(state.get());
    return Status::Ok();
  }

 private:
  uint64_t ChunkBegin(uint64_t k) const { return l_.data_offset + k * kChunkBytes; }
  uint64_t ChunkEnd(uint64_t k) const { return std::min(ChunkBegin(k) + kChunkBytes, l_.data_end); }
  std::byte* Slot(Mapping& pool, uint64_t k) const {
    return pool.mutable_data() + (k % nslots_) * chunk_alloc_;
  }

  void Fill(uint64_t k, std::byte* buf) const {
    const uint64_t begin = ChunkBegin(k);
    ForEachSegment(l_, begin, ChunkEnd(k), [&](uint64_t off, uint64_t len, size_t t) {
      std::byte* dst = buf + (off - begin);
      if (t == SIZE_MAX) {
        std::memset(dst, 0, len);
      } else {
        FillTensorBytes(seed_, first_tensor_ + t, tensors_[t].dtype, off - l_.tensor_offsets[t],
                        dst, len);
        // Segments start on element boundaries: chunks start 4096-aligned in the data area
        // and big-endian files are WLF, whose tensors start on their (>= 64) alignment.
        if (order_ == std::endian::big) SwapWlfElements(tensors_[t].dtype, dst, len);
      }
    });
  }

  void Work(Mapping& pool) {
    for (;;) {
      const uint64_t k = next_.fetch_add(1, std::memory_order_relaxed);
      if (k >= nchunks_) return;
      {
        std::unique_lock<std::mutex> lk(mu_);
        slot_free_.wait(lk, [&] { return stop_ || k < written_ + nslots_; });
        if (stop_) return;
      }
      Fill(k, Slot(pool, k));
      {
        std::lock_guard<std::mutex> lk(mu_);
        ready_[k % nslots_] = k;
      }
      chunk_ready_.notify_one();  // only the writer waits on it
    }
  }

  Status WriteAll(Mapping& pool, XXH3_state_t* state) {
    for (uint64_t k = 0; k < nchunks_; ++k) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        while (ready_[k % nslots_] != k) {
          if (Interrupted()) return Status::Failed("interrupted");
          chunk_ready_.wait_for(lk, std::chrono::milliseconds(100));
        }
      }
      if (Interrupted()) return Status::Failed("interrupted");
      const std::byte* buf = Slot(pool, k);
      const uint64_t begin = ChunkBegin(k), end = ChunkEnd(k);
      ForEachSegment(l_, begin, end, [&](uint64_t off, uint64_t len, size_t t) {
        if (t == SIZE_MAX) return;
        XXH3_64bits_update(state, buf + (off - begin), len);
        if (model_state_ != nullptr) XXH3_64bits_update(model_state_, buf + (off - begin), len);
      });
      LB_RETURN_IF_ERROR(PwriteExact(fd_, path_, buf, end - begin, begin));
      {
        std::lock_guard<std::mutex> lk(mu_);
        written_ = k + 1;
      }
      slot_free_.notify_all();
      WriteBehind(k);
      progress_->Update(progress_base_ + end, false);
    }
    return Status::Ok();
  }

  // Starts writeback of chunk k and, a few chunks behind, waits for it and drops it from the
  // page cache. Advisory: errors are left to the final fsync to report.
  void WriteBehind(uint64_t k) {
    const uint64_t begin = ChunkBegin(k);
    ::sync_file_range(fd_, static_cast<off_t>(begin), static_cast<off_t>(ChunkEnd(k) - begin),
                      SYNC_FILE_RANGE_WRITE);
    if (k >= kWriteBehindChunks) {
      const uint64_t old = k - kWriteBehindChunks;
      const uint64_t ob = ChunkBegin(old);
      const auto olen = static_cast<off_t>(ChunkEnd(old) - ob);
      ::sync_file_range(fd_, static_cast<off_t>(ob), olen,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER);
      ::posix_fadvise(fd_, static_cast<off_t>(ob), olen, POSIX_FADV_DONTNEED);
    }
  }

  const FileLayout& l_;
  const std::vector<WlfTensorSpec>& tensors_;
  const size_t first_tensor_;
  const uint64_t seed_;
  const std::endian order_;
  const int fd_;
  const std::string& path_;
  Progress* progress_;
  const uint64_t progress_base_;
  XXH3_state_t* model_state_;
  uint64_t nchunks_ = 0;
  size_t chunk_alloc_ = 0;
  size_t nslots_ = 1;
  int nthreads_ = 1;

  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::condition_variable slot_free_;    // written_ advanced, or stop_
  std::condition_variable chunk_ready_;  // a ready_ entry changed
  uint64_t written_ = 0;                 // chunks [0, written_) are written; guarded by mu_
  bool stop_ = false;                    // guarded by mu_
  std::vector<uint64_t> ready_;          // per slot: the chunk it holds, ready; guarded by mu_
};

}  // namespace

Progress::Progress(bool on, uint64_t total) : on_(on), total_(total), tty_(::isatty(2) == 1) {
  start_ = last_ = std::chrono::steady_clock::now();
}

void Progress::Update(uint64_t done, bool final) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  const int pct = total_ ? static_cast<int>(done * 100.0 / static_cast<double>(total_)) : 100;
  if (tty_) {
    if (!final && now - last_ < std::chrono::seconds(1)) return;
  } else {
    if (!final && pct < next_pct_) return;
    while (next_pct_ <= pct) next_pct_ += 10;
  }
  last_ = now;
  const double s = std::chrono::duration<double>(now - start_).count();
  const double mbps = s > 0 ? static_cast<double>(done) / s / 1e6 : 0;
  const std::string line = fmt::format("gen: {} / {} ({}%), {:.0f} MB/s", FormatBytes(done),
                                       FormatBytes(total_), pct, mbps);
  if (tty_) {
    fmt::print(stderr, "\r{:<60}{}", line, final ? "\n" : "");
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

Status WriteData(const GenOptions& opts, const GenPlan& plan, const FileLayout& layout,
                 const std::vector<WlfTensorSpec>& tensors, size_t first_tensor,
                 const TempFile& tmp, Progress* progress, uint64_t progress_base,
                 XXH3_state_t* model_state, uint64_t* checksum) {
  int threads = opts.threads;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  DataWriter writer(layout, tensors, first_tensor, opts.seed, plan.byte_order, tmp.fd(), tmp.path(),
                    threads, progress, progress_base, model_state);
  return writer.Run(checksum);
}

}  // namespace loadbench
