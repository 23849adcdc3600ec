#include "loaders/cuda/gpu.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "loaders/strategy/registry.h"

#ifdef LOADBENCH_HAVE_CUDA
#include "loaders/cuda/device.h"
#endif

namespace loadbench::gpu {

#ifdef LOADBENCH_HAVE_CUDA

std::string UnsupportedReason() { return cuda::UnsupportedReason(); }

nlohmann::ordered_json Info() {
  return cuda::UnsupportedReason().empty() ? cuda::DeviceInfo() : nullptr;
}

Status Warm(double* seconds) {
  if (const std::string& why = cuda::UnsupportedReason(); !why.empty()) {
    return Status::Unsupported(why);
  }
  const auto t0 = std::chrono::steady_clock::now();
  LB_RETURN_IF_ERROR(cuda::Check(cudaFree(nullptr), "the CUDA context", "cudaFree"));
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

struct CopyBench::Impl {
  cuda::DeviceMemory device;
  cuda::PinnedMemory pinned;
  std::vector<std::byte> pageable;
  const std::byte* host = nullptr;
  uint64_t bytes = 0;
};

Status CopyBench::Init(bool pinned, uint64_t bytes) {
  if (const std::string& why = cuda::UnsupportedReason(); !why.empty()) {
    return Status::Unsupported(why);
  }
  const std::string what = pinned ? "pinned copy buffer" : "pageable copy buffer";
  LB_RETURN_IF_ERROR(impl_->device.Allocate(bytes, what));
  if (pinned) {
    LB_RETURN_IF_ERROR(impl_->pinned.Allocate(bytes, what));
    std::memset(impl_->pinned.get(), 0x5a, bytes);
    impl_->host = impl_->pinned.get();
  } else {
    impl_->pageable.assign(bytes, std::byte{0x5a});  // faulted in: the copy times no faults
    impl_->host = impl_->pageable.data();
  }
  impl_->bytes = bytes;
  return Status::Ok();
}

Status CopyBench::Copy(double* seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  LB_RETURN_IF_ERROR(cuda::Check(cudaMemcpy(impl_->device.get(), impl_->host, impl_->bytes,
                                            cudaMemcpyHostToDevice),
                                 "host-to-device copy", "cudaMemcpy"));
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

#else

std::string UnsupportedReason() {
  return "this binary was built without the CUDA strategies: " + CudaNotBuiltReason();
}

nlohmann::ordered_json Info() { return nullptr; }

Status Warm(double*) { return Status::Unsupported(UnsupportedReason()); }

struct CopyBench::Impl {};

Status CopyBench::Init(bool, uint64_t) { return Status::Unsupported(UnsupportedReason()); }

Status CopyBench::Copy(double*) { return Status::Unsupported(UnsupportedReason()); }

#endif

CopyBench::CopyBench() : impl_(std::make_unique<Impl>()) {}
CopyBench::~CopyBench() = default;

}  // namespace loadbench::gpu
