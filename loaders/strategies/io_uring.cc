// io_uring: the tensors' span of the file is read straight into one buffer by `chunk`-sized
// read requests, up to `qd` of them in flight on one ring, optionally with O_DIRECT, registered
// buffers and a registered file; tensors are views into that buffer.
#include <fcntl.h>
#include <liburing.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/base/io_ring.h"
#include "loaders/blocks/destination.h"
#include "loaders/blocks/ring_reads.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

// O_DIRECT wants offsets, lengths and memory aligned to the device's logical block; a page
// covers every block size in use.
constexpr uint64_t kDirectAlign = 4096;
// A request never crosses a multiple of this in the span: the registered iovecs are this long
// (the kernel's limit for one), and a read returns at most 2 GiB - 4 KiB anyway.
constexpr uint64_t kIovecBytes = 1ull << 30;

class IoUringLoader final : public Loader, private RingReads {
 public:
  explicit IoUringLoader(const Params& params)
      : qd_(static_cast<unsigned>(params.Int("qd"))),
        chunk_(params.Bytes("chunk")),
        direct_(params.On("direct")),
        fixed_(params.On("fixed")),
        regfile_(params.On("regfile")),
        kind_(BufferKindOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    path_ = path;
    if (direct_ && chunk_ % kDirectAlign != 0) {
      // Rounding would run a different benchmark from the one the results say was run.
      return Status::BadInput(
          fmt::format("{}: io_uring: direct=on needs chunk to be a multiple of {} bytes, got {}",
                      path, kDirectAlign, chunk_));
    }
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
    if (direct_) LB_RETURN_IF_ERROR(SetDirect(fd.get()));

    file_span_ = TensorSpan(table, kDirectAlign);
    LB_RETURN_IF_ERROR(Region::Allocate(kind_, file_span_.size(), path, &region_));
    if (file_span_.size() > 0) {
      // The table was validated against the file's size, so every byte up to there must
      // arrive; the span may reach past it by less than a page.
      data_end_ = std::min(file_span_.end, table.file_size);
      LB_RETURN_IF_ERROR(ReadSpan(fd.get()));
    }
    ViewsIntoSpan(table, file_span_, region_.data(), views);
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    return {{"requests_submitted", submitted()},
            {"short_reads_requeued", short_reads_requeued_},
            {"eagain_retries", eagain_retries_},
            {"eintr_retries", eintr_retries_}};
  }

 private:
  // One read in flight: file bytes [offset, offset + len) into buf. Only the bytes before
  // data_end_ must arrive; an O_DIRECT request may ask for more, up to the span's end.
  struct Request {
    uint64_t offset;
    std::byte* buf;
    unsigned len;
  };

  // fcntl rather than O_DIRECT in open(2): open's error would be reported by OpenReadOnly as
  // "path: Invalid argument", and EINVAL here can only mean the filesystem refuses O_DIRECT.
  Status SetDirect(int fd) const {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return Status::FromErrno(fmt::format("{}: fcntl(F_GETFL)", path_), errno);
    if (::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) {
      const int err = errno;
      if (err == EINVAL) {
        return Status::OfErrno(
            Status::Code::kUnsupported,
            fmt::format("{}: the filesystem refuses O_DIRECT (direct=on)", path_), err);
      }
      return Status::FromErrno(fmt::format("{}: fcntl(F_SETFL, O_DIRECT)", path_), err);
    }
    return Status::Ok();
  }

  Status RegisterBuffers(io_uring* ring) const {
    std::vector<iovec> iovecs;
    for (uint64_t at = 0; at < region_.size(); at += kIovecBytes) {
      iovecs.push_back({region_.data() + at, std::min(kIovecBytes, region_.size() - at)});
    }
    const int ret =
        ::io_uring_register_buffers(ring, iovecs.data(), static_cast<unsigned>(iovecs.size()));
    if (ret == -ENOMEM) {
      // Registering pins the pages, which counts against RLIMIT_MEMLOCK for all but root.
      return Status::OfErrno(Status::Code::kUnsupported,
                             fmt::format("{}: io_uring_register_buffers of {} bytes", path_,
                                         region_.size()),
                             -ret, " (RLIMIT_MEMLOCK too low?)");
    }
    if (ret < 0) {
      return Status::IOErrorFromErrno(
          fmt::format("{}: io_uring_register_buffers of {} bytes", path_, region_.size()), -ret);
    }
    return Status::Ok();
  }

  // Sets up the ring for this load and reads the span into the region.
  Status ReadSpan(int fd) {
    IoRing ring;
    if (const int ret = ring.Init(qd_); ret < 0) {
      return Status::Unsupported(fmt::format("{}: {}", path_, RingSetupFailure(-ret)));
    }
    if (fixed_) LB_RETURN_IF_ERROR(RegisterBuffers(ring.get()));
    fd_index_ = fd;
    if (regfile_) {
      if (const int ret = ::io_uring_register_files(ring.get(), &fd, 1); ret < 0) {
        return Status::IOErrorFromErrno(path_ + ": io_uring_register_files", -ret);
      }
      fd_index_ = 0;
    }
    return ReadSpan(ring.get());
  }

  // Queues the request of `slot` on the ring, with the slot as its user_data. The ring has an
  // entry for every slot, so one is always free.
  void Queue(io_uring* ring, size_t slot) {
    const Request& r = requests_[slot];
    io_uring_sqe* sqe = ::io_uring_get_sqe(ring);
    if (fixed_) {
      const auto index = static_cast<int>((r.buf - region_.data()) / kIovecBytes);
      ::io_uring_prep_read_fixed(sqe, fd_index_, r.buf, r.len, r.offset, index);
    } else {
      ::io_uring_prep_read(sqe, fd_index_, r.buf, r.len, r.offset);
    }
    if (regfile_) sqe->flags |= IOSQE_FIXED_FILE;
    ::io_uring_sqe_set_data64(sqe, slot);
    Prepared();
  }

  // Where the requests stop: O_DIRECT reads whole pages, so up to the span's end; buffered
  // reads stop at the data's end.
  uint64_t ReadEnd() const { return direct_ ? file_span_.end : data_end_; }

  // The next request of the span into `slot`: `chunk` bytes, cut at the next iovec boundary
  // and at ReadEnd().
  void QueueNext(io_uring* ring, size_t slot) {
    const uint64_t at = next_ - file_span_.begin;
    const uint64_t len = std::min({chunk_, ReadEnd() - next_, kIovecBytes - at % kIovecBytes});
    requests_[slot] = {next_, region_.data() + at, static_cast<unsigned>(len)};
    next_ += len;
    Queue(ring, slot);
  }

  // Handles the completion of `slot` with result `res`: done, requeued, or an error.
  Status Complete(io_uring* ring, size_t slot, int res) override {
    Request& r = requests_[slot];
    if (res == -EAGAIN || res == -EINTR) {
      ++(res == -EAGAIN ? eagain_retries_ : eintr_retries_);
      Queue(ring, slot);
      return Status::Ok();
    }
    if (res < 0) {
      return Status::IOErrorFromErrno(
          fmt::format("{}: read of {} bytes at offset {}", path_, r.len, r.offset), -res);
    }
    const uint64_t got_to = r.offset + static_cast<uint64_t>(res);
    if (got_to >= std::min<uint64_t>(r.offset + r.len, data_end_)) {
      free_.push_back(slot);
      return Status::Ok();
    }
    // An O_DIRECT read stops inside a block only at the end of the file, and the rest could
    // not be asked for anyway: its offset would be unaligned.
    if (res == 0 || (direct_ && res % kDirectAlign != 0)) {
      return Status::BadInput(
          fmt::format("{}: truncated: the file ends at offset {}, its tensors need it up to {}",
                      path_, got_to, data_end_));
    }
    ++short_reads_requeued_;
    r = {got_to, r.buf + res, r.len - static_cast<unsigned>(res)};
    Queue(ring, slot);
    return Status::Ok();
  }

  // The read loop (blocks/ring_reads.h), every slot free at the start.
  Status ReadSpan(io_uring* ring) {
    requests_.resize(qd_);
    for (size_t slot = qd_; slot > 0; --slot) free_.push_back(slot - 1);
    next_ = file_span_.begin;
    return RingReads::Run(ring, path_);
  }

  // Up to qd requests in flight, until the span is queued.
  void QueueMore(io_uring* ring) override {
    while (next_ < ReadEnd() && !free_.empty()) {
      QueueNext(ring, free_.back());
      free_.pop_back();
    }
  }

  const unsigned qd_;
  const uint64_t chunk_;
  const bool direct_;
  const bool fixed_;
  const bool regfile_;
  const BufferKind kind_;
  Region region_;  // the span's bytes; the views point into it

  // State of one Load.
  std::string path_;
  FileSpan file_span_;
  uint64_t data_end_ = 0;
  int fd_index_ = -1;              // the fd, or its index among the registered files
  std::vector<Request> requests_;  // by slot, the user_data of its requests
  std::vector<size_t> free_;       // slots without a request in flight
  uint64_t next_ = 0;              // file offset of the next request

  uint64_t short_reads_requeued_ = 0;
  uint64_t eagain_retries_ = 0;
  uint64_t eintr_retries_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "io_uring",
    .summary = "io_uring reads of the tensors' span into one buffer, qd requests in flight",
    .options = {{"qd",
                 OptionSpec::Kind::kInt,
                 "32",
                 "queue depth: the most read requests in flight",
                 {},
                 1,
                 4096},
                {"chunk", OptionSpec::Kind::kBytes, "1MiB",
                 "bytes per read request (a multiple of 4096 with direct=on)"},
                {"direct", OptionSpec::Kind::kChoice, "off",
                 "open with O_DIRECT, bypassing the page cache", kOnOff},
                {"fixed", OptionSpec::Kind::kChoice, "off",
                 "register the destination with io_uring_register_buffers and use read_fixed",
                 kOnOff},
                {"regfile", OptionSpec::Kind::kChoice, "off",
                 "register the file with io_uring_register_files and use IOSQE_FIXED_FILE", kOnOff},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<IoUringLoader>(p);
    },
    .flags = kEager | kAllocates | kDirectIO,
    .unsupported_reason = IoUringUnsupportedReason,
}));

}  // namespace loadbench
