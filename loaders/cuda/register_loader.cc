// cuda_register: no copy on the host. The file is mapped read-only and pinned in place a chunk
// at a time with cudaHostRegister (read-only), which faults the chunk's pages in; the GPU then
// copies straight out of the page cache (cudaMemcpyAsync), while the next chunk is pinned. A
// chunk is unpinned as soon as its copies are done.
#include <unistd.h>

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/cuda/device.h"

namespace loadbench {
namespace {

class CudaRegisterLoader final : public cuda::DeviceLoader {
 public:
  explicit CudaRegisterLoader(const Params& params)
      : chunk_(params.Bytes("chunk")), pinned_chunks_(static_cast<size_t>(params.Int("ahead"))) {}

  Status LoadToDevice(const std::string& path, const TensorTable& table, DeviceLoad* out) override {
    int read_only = 0;
    LB_RETURN_IF_ERROR(
        cuda::Check(cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, 0),
                    path, "cudaDeviceGetAttribute"));
    if (!read_only) {
      return Status::Unsupported(fmt::format(
          "{}: this device cannot pin memory read-only (cudaHostRegisterReadOnly), which a "
          "read-only mapping of the file needs",
          path));
    }
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (chunk_ % page != 0) {
      return Status::BadInput(fmt::format(
          "{}: cuda_register: chunk={} is not a multiple of the {}-byte page", path, chunk_, page));
    }
    LB_RETURN_IF_ERROR(MapWholeFile(path, table.file_size, 0, false, &map_));
    LB_RETURN_IF_ERROR(stream_.Create(path));
    LB_RETURN_IF_ERROR(device_.Allocate(table.tensor_bytes, path));
    const FileSpan span = TensorSpan(table, page);
    const uint64_t end = std::min<uint64_t>(span.end, table.file_size);
    const std::vector<uint64_t> packed = cuda::PackedOffsets(table);
    uint64_t pinned = 0;
    for (uint64_t at = span.begin; at < end; at += chunk_) {
      // Room for this chunk: the oldest pinned chunk is released once its copies are done.
      while (in_flight_.size() >= pinned_chunks_) {
        LB_RETURN_IF_ERROR(Release(path, &pinned));
      }
      const uint64_t len = std::min(chunk_, end - at);
      Pinned p;
      LB_RETURN_IF_ERROR(
          p.registration.Register(map_.data() + at, len, cudaHostRegisterReadOnly, path));
      pinned += len;
      out->pinned_bytes = std::max(out->pinned_bytes, pinned);
      p.bytes = len;
      for (const cuda::Piece& piece : cuda::PiecesIn(table, packed, at, at + len)) {
        LB_RETURN_IF_ERROR(cuda::Check(cudaMemcpyAsync(device_.get() + piece.device_offset,
                                                       map_.data() + piece.file_offset, piece.size,
                                                       cudaMemcpyHostToDevice, stream_.get()),
                                       path, "cudaMemcpyAsync"));
        out->copied_bytes += piece.size;
        ++copies_;
      }
      LB_RETURN_IF_ERROR(p.copied.Create(path));
      LB_RETURN_IF_ERROR(
          cuda::Check(cudaEventRecord(p.copied.get(), stream_.get()), path, "cudaEventRecord"));
      in_flight_.push_back(std::move(p));
    }
    while (!in_flight_.empty()) LB_RETURN_IF_ERROR(Release(path, &pinned));
    out->on_device = std::chrono::steady_clock::now();
    return cuda::Verify(device_, stream_.get(), path, out);
  }

  // A failed load may leave copies queued: they must finish before their source is unpinned
  // and unmapped.
  ~CudaRegisterLoader() override {
    if (stream_.get()) cudaStreamSynchronize(stream_.get());
  }

  nlohmann::json Details() const override { return {{"copies", copies_}}; }

 private:
  struct Pinned {
    cuda::HostRegistration registration;
    cuda::Event copied;
    uint64_t bytes = 0;
  };

  Status Release(const std::string& path, uint64_t* pinned) {
    Pinned& p = in_flight_.front();
    LB_RETURN_IF_ERROR(
        cuda::Check(cudaEventSynchronize(p.copied.get()), path, "cudaEventSynchronize"));
    *pinned -= p.bytes;
    in_flight_.pop_front();
    return Status::Ok();
  }

  const uint64_t chunk_;
  const size_t pinned_chunks_;
  // Torn down in reverse: unpin, then free the device memory, then unmap.
  Mapping map_;
  cuda::DeviceMemory device_;
  cuda::Stream stream_;
  std::deque<Pinned> in_flight_;
  uint64_t copies_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "cuda_register",
    .summary = "mmap, cudaHostRegister (read-only) a chunk at a time, cudaMemcpyAsync straight "
               "from the page cache to the GPU",
    .options = {{"chunk", OptionSpec::Kind::kBytes, "64MiB",
                 "bytes pinned by one cudaHostRegister (a multiple of the page size)"},
                {"ahead",
                 OptionSpec::Kind::kInt,
                 "2",
                 "chunks pinned at once: the next is faulted in while the last ones copy",
                 {},
                 1,
                 1024}},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<CudaRegisterLoader>(p);
    },
    .flags = kDevice | kMapsFile,
    .unsupported_reason = [] { return cuda::UnsupportedReason(); },
}));

}  // namespace loadbench
