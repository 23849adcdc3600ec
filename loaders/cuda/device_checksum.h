// The file's checksum (XXH3-64 of the tensor bytes in table order) computed by the GPU over the
// packed tensors in its memory: a load into the device is complete only when this equals the
// file's checksum.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace loadbench::cuda {

// XXH3-64 of `len` bytes at device address `data` (8-byte aligned), on `stream`; waits for the
// result. Each 1024-byte block's lane sums are computed in parallel, then eight threads chain
// them through XXH3's per-block scramble, one segment at a time so the scratch stays small.
cudaError_t DeviceXxh3(const std::byte* data, uint64_t len, cudaStream_t stream, uint64_t* out);

}  // namespace loadbench::cuda
