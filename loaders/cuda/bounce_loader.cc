// cuda_bounce: the serving loaders' path. The tensors' span is read (O_DIRECT by default, with
// io_uring keeping one read per bounce buffer in flight, or pread one at a time) into N pinned
// bounce buffers, and each buffer's tensor pieces are copied to the GPU with cudaMemcpyAsync on
// the buffer's own stream, so reads and host-to-device copies overlap.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/base/io_ring.h"
#include "loaders/blocks/destination.h"
#include "loaders/blocks/ring_reads.h"
#include "loaders/cuda/device.h"

namespace loadbench {
namespace {

constexpr uint64_t kMaxChunk = uint64_t{1} << 30;

class CudaBounceLoader final : public cuda::DeviceLoader {
 public:
  explicit CudaBounceLoader(const Params& params)
      : buffers_(static_cast<size_t>(params.Int("buffers"))),
        chunk_(params.Bytes("chunk")),
        uring_(params.Choice("io") == "io_uring"),
        direct_(params.On("direct")) {}

  Status LoadToDevice(const std::string& path, const TensorTable& table, DeviceLoad* out) override {
    path_ = path;
    table_ = &table;
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, direct_ ? O_DIRECT : 0, &fd));
    if (chunk_ > kMaxChunk) {
      // One io_uring read asks for at most 4 GiB - 1, and a pinned buffer this size is a
      // different experiment.
      return Status::BadInput(fmt::format("{}: cuda_bounce: chunk={} is over the 1 GiB a bounce "
                                          "buffer may have",
                                          path, chunk_));
    }
    align_ = direct_ ? DirectIoAlignment(fd.get()) : 1;
    if (chunk_ % align_ != 0) {
      return Status::BadInput(fmt::format(
          "{}: cuda_bounce: chunk={} is not a multiple of the {}-byte O_DIRECT alignment", path,
          chunk_, align_));
    }
    span_ = TensorSpan(table, align_);
    // Every byte up to here must arrive; an O_DIRECT span may reach past the end of the file.
    data_end_ = std::min(span_.end, table.file_size);
    packed_ = cuda::PackedOffsets(table);
    LB_RETURN_IF_ERROR(device_.Allocate(table.tensor_bytes, path));
    slots_.resize(std::min<uint64_t>(buffers_, std::max<uint64_t>(Chunks(), 1)));
    for (Slot& s : slots_) {
      LB_RETURN_IF_ERROR(s.buffer.Allocate(chunk_, path));
      LB_RETURN_IF_ERROR(s.stream.Create(path));
      LB_RETURN_IF_ERROR(s.copied.Create(path));
    }
    out->pinned_bytes = slots_.size() * chunk_;
    LB_RETURN_IF_ERROR(uring_ ? ReadRing(fd.get()) : ReadOneByOne(fd.get()));
    for (Slot& s : slots_) {
      LB_RETURN_IF_ERROR(
          cuda::Check(cudaStreamSynchronize(s.stream.get()), path, "cudaStreamSynchronize"));
    }
    out->on_device = std::chrono::steady_clock::now();
    out->copied_bytes = copied_bytes_;
    return cuda::Verify(device_, slots_.front().stream.get(), path, out);
  }

  // A failed load may leave copies queued: they must finish before their buffers are freed.
  ~CudaBounceLoader() override {
    for (Slot& s : slots_) {
      if (s.stream.get()) cudaStreamSynchronize(s.stream.get());
    }
  }

  nlohmann::json Details() const override {
    return {{"reads", reads_},
            {"short_reads_requeued", short_reads_},
            {"copies", copies_},
            {"copy_waits", copy_waits_}};
  }

 private:
  struct Slot {
    cuda::PinnedMemory buffer;
    cuda::Stream stream;
    cuda::Event copied;  // the buffer's last copies finished: it can be read into again
    bool copying = false;
    uint64_t offset = 0;  // the chunk it holds or is reading
    uint64_t len = 0;
    uint64_t got = 0;  // bytes read so far
  };

  uint64_t Chunks() const { return (span_.size() + chunk_ - 1) / chunk_; }
  uint64_t ReadEnd() const { return direct_ ? span_.end : data_end_; }

  // Waits until the slot's buffer may be overwritten.
  Status Reuse(Slot& s) {
    if (!s.copying) return Status::Ok();
    if (cudaEventQuery(s.copied.get()) == cudaErrorNotReady) ++copy_waits_;
    LB_RETURN_IF_ERROR(
        cuda::Check(cudaEventSynchronize(s.copied.get()), path_, "cudaEventSynchronize"));
    s.copying = false;
    return Status::Ok();
  }

  // The chunk at `at` goes into slot `s` next.
  void Assign(Slot& s, uint64_t at) {
    s.offset = at;
    s.len = std::min(chunk_, ReadEnd() - at);
    s.got = 0;
  }

  // How a pread of the slot's chunk that returned `res` bytes leaves it: done, more to ask for,
  // or the file ended before its tensors did (the ring's reads follow the same rules in
  // ReadRequests).
  Status Advance(Slot& s, ssize_t res, bool* done) {
    if (res < 0) {
      return Status::IOErrorFromErrno(fmt::format("{}: read of {} bytes at offset {}", path_,
                                                  s.len - s.got, s.offset + s.got),
                                      -res);
    }
    ++reads_;
    s.got += static_cast<uint64_t>(res);
    const uint64_t need = std::min(s.len, data_end_ - s.offset);
    *done = s.got >= need;
    if (*done) return Status::Ok();
    if (res == 0 || res % static_cast<ssize_t>(align_) != 0) {
      return Status::BadInput(
          fmt::format("{}: truncated: the file ends at offset {}, its tensors need it up to {}",
                      path_, s.offset + s.got, data_end_));
    }
    ++short_reads_;
    return Status::Ok();
  }

  // The slot's chunk is in its buffer: its tensor pieces go to the device on its stream.
  Status CopyOut(Slot& s) {
    const uint64_t end = std::min(s.offset + s.got, data_end_);
    for (const cuda::Piece& p : cuda::PiecesIn(*table_, packed_, s.offset, end)) {
      LB_RETURN_IF_ERROR(
          cuda::Check(cudaMemcpyAsync(device_.get() + p.device_offset,
                                      s.buffer.get() + (p.file_offset - s.offset), p.size,
                                      cudaMemcpyHostToDevice, s.stream.get()),
                      path_, "cudaMemcpyAsync"));
      ++copies_;
      copied_bytes_ += p.size;
    }
    LB_RETURN_IF_ERROR(
        cuda::Check(cudaEventRecord(s.copied.get(), s.stream.get()), path_, "cudaEventRecord"));
    s.copying = true;
    return Status::Ok();
  }

  // One read at a time on this thread; the copies of the chunks before it run meanwhile.
  Status ReadOneByOne(int fd) {
    size_t k = 0;
    for (uint64_t at = span_.begin; at < ReadEnd(); at += chunk_, k = (k + 1) % slots_.size()) {
      Slot& s = slots_[k];
      LB_RETURN_IF_ERROR(Reuse(s));
      Assign(s, at);
      for (bool done = false; !done;) {
        ssize_t n;
        do {
          n = ::pread(fd, s.buffer.get() + s.got, s.len - s.got,
                      static_cast<off_t>(s.offset + s.got));
        } while (n < 0 && errno == EINTR);
        LB_RETURN_IF_ERROR(Advance(s, n < 0 ? -errno : n, &done));
      }
      LB_RETURN_IF_ERROR(CopyOut(s));
    }
    return Status::Ok();
  }

  // A read in flight for every buffer, by the ring read loop (blocks/ring_reads.h): a finished
  // read's pieces are queued for copying, and its buffer is read into again once they have
  // left it, while the other reads go on. Completions are handled one at a time, so that the
  // wait for one buffer's copies does not hold back the next read of another.
  Status ReadRing(int fd) {
    IoRing ring;
    if (const int ret = ring.Init(static_cast<unsigned>(slots_.size())); ret < 0) {
      return Status::Unsupported(fmt::format("{}: {}", path_, RingSetupFailure(-ret)));
    }
    uint64_t next = span_.begin;
    const RingSource chunks = [&](size_t k, RingRead* read) {
      if (next >= ReadEnd()) return false;
      Slot& s = slots_[k];
      Assign(s, next);
      next += chunk_;
      *read = {.fd = fd,
               .offset = s.offset,
               .dst = s.buffer.get(),
               .len = s.len,
               .need = std::min(s.len, data_end_ - s.offset),
               .path = path_};
      return true;
    };
    const RingArrived copy_out = [&](size_t k, const RingRead&, uint64_t got) -> Status {
      Slot& s = slots_[k];
      s.got = got;
      LB_RETURN_IF_ERROR(CopyOut(s));
      return next < ReadEnd() ? Reuse(s) : Status::Ok();
    };
    RingReadCounts counts;
    const Status st =
        ReadRequests(ring.get(),
                     {.slots = slots_.size(), .align = align_, .reap_one = true, .name = path_},
                     chunks, copy_out, &counts);
    reads_ += counts.reads;
    short_reads_ += counts.short_reads;
    return st;
  }

  const size_t buffers_;
  const uint64_t chunk_;
  const bool uring_;
  const bool direct_;
  std::string path_;
  const TensorTable* table_ = nullptr;
  FileSpan span_;
  uint64_t data_end_ = 0;
  std::vector<uint64_t> packed_;
  cuda::DeviceMemory device_;  // destroyed after the slots: their copies target it
  std::deque<Slot> slots_;
  uint64_t align_ = 1;  // O_DIRECT's alignment; 1 without direct
  uint64_t reads_ = 0, short_reads_ = 0, copies_ = 0, copy_waits_ = 0, copied_bytes_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "cuda_bounce",
    .summary = "reads (O_DIRECT, io_uring) into N pinned bounce buffers, cudaMemcpyAsync per "
               "buffer on its own stream: reads and host-to-device copies overlap",
    .options =
        {{"buffers",
          OptionSpec::Kind::kInt,
          "4",
          "pinned bounce buffers (cudaHostAlloc), each with its own stream; with io=io_uring "
          "also the reads in flight",
          {},
          1,
          256},
         {"chunk", OptionSpec::Kind::kBytes, "16MiB",
          "bytes per buffer and per read (a multiple of 4096 with direct=on)"},
         {"io",
          OptionSpec::Kind::kChoice,
          "io_uring",
          "io_uring: a read in flight per buffer; pread: one read at a time",
          {"io_uring", "pread"}},
         {"direct", OptionSpec::Kind::kChoice, "on", "open with O_DIRECT, bypassing the page cache",
          kOnOff}},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<CudaBounceLoader>(p);
    },
    .flags = kDevice | kDirectIO,
    .unsupported_reason = [] { return cuda::UnsupportedReason(); },
}));

}  // namespace loadbench
