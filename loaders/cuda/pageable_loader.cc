// cuda_pageable: the plain way. A host strategy (fread by default) loads the tensors into
// ordinary pageable memory, then cudaMemcpy copies each to the GPU; the driver stages pageable
// memory through pinned buffers of its own, and nothing overlaps the reads.
#include <fmt/format.h>

#include "loaders/cuda/device.h"
#include "loaders/strategy/registry.h"

namespace loadbench {
namespace {

// The host strategies whose views can be copied from: every one that delivers the whole file
// at once into this process's memory.
const std::vector<std::string> kHosts = {"fread",         "pread",         "pread_mt",
                                         "odirect",       "io_uring",      "mmap",
                                         "mmap_seq",      "mmap_populate", "mmap_willneed",
                                         "mmap_prefetch", "mlock"};

class CudaPageableLoader final : public cuda::DeviceLoader {
 public:
  explicit CudaPageableLoader(const Params& params) : host_(params.Choice("host")) {}

  Status LoadToDevice(const std::string& path, const TensorTable& table, DeviceLoad* out) override {
    const StrategyInfo* info = FindStrategy(host_);
    if (info == nullptr) {
      return Status::Unsupported(fmt::format("{}: host strategy {} is not built", path, host_));
    }
    if (std::string why = info->unsupported_reason(); !why.empty()) {
      return Status::Unsupported(fmt::format("{}: host strategy {}: {}", path, host_, why));
    }
    LB_RETURN_IF_ERROR(stream_.Create(path));
    Params params;
    LB_RETURN_IF_ERROR(Params::Resolve(info->name, info->options, {}, &params));
    host_loader_ = info->make(params);
    std::vector<TensorBytes> views;
    const Status loaded = host_loader_->Load(path, table, &views);
    host_details_ = host_loader_->Details();
    LB_RETURN_IF_ERROR(loaded);
    LB_RETURN_IF_ERROR(device_.Allocate(table.tensor_bytes, path));
    const std::vector<uint64_t> packed = cuda::PackedOffsets(table);
    for (size_t i = 0; i < views.size(); ++i) {
      if (views[i].empty()) continue;
      LB_RETURN_IF_ERROR(cuda::Check(cudaMemcpy(device_.get() + packed[i], views[i].data(),
                                                views[i].size(), cudaMemcpyHostToDevice),
                                     path, "cudaMemcpy"));
      out->copied_bytes += views[i].size();
    }
    out->on_device = std::chrono::steady_clock::now();
    return cuda::Verify(device_, stream_.get(), path, out);
  }

  nlohmann::json Details() const override {
    return {{"host", host_}, {"host_details", host_details_}};
  }

 private:
  const std::string host_;
  std::unique_ptr<Loader> host_loader_;  // holds the host copy until the run ends
  nlohmann::json host_details_ = nlohmann::json::object();
  cuda::DeviceMemory device_;
  cuda::Stream stream_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "cuda_pageable",
    .summary = "a host strategy loads into pageable memory, then cudaMemcpy per tensor to the GPU",
    .options = {{"host", OptionSpec::Kind::kChoice, "fread",
                 "the host strategy (default options) whose buffers are copied", kHosts}},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<CudaPageableLoader>(p);
    },
    .flags = kDevice,
    .unsupported_reason = [] { return cuda::UnsupportedReason(); },
}));

}  // namespace loadbench
