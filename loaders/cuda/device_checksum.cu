#include "loaders/cuda/device_checksum.h"

#include "loaders/cuda/xxh3_parts.h"

namespace loadbench::cuda {
namespace {

// Blocks per segment: 64 MiB of input, 4 MiB of lane sums.
constexpr uint64_t kSegmentBlocks = 1u << 16;
constexpr int kThreads = 256;

__global__ void BlockSums(const uint64_t* data, uint64_t first_block, uint64_t blocks,
                          uint64_t* sums) {
  const uint64_t t = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (t >= blocks * 8) return;
  const uint64_t block = t / 8;
  const int lane = static_cast<int>(t % 8);
  sums[t] = xxh3::BlockLane(data + (first_block + block) * (xxh3::kBlockBytes / 8), lane);
}

// One thread per lane: the scrambles are sequential, the lanes independent. The sums are read
// ahead in groups so their loads overlap the chain.
__global__ void Chain(const uint64_t* sums, uint64_t blocks, uint64_t* acc) {
  const int lane = static_cast<int>(threadIdx.x);
  uint64_t a = acc[lane];
  constexpr uint64_t kAhead = 16;
  uint64_t k = 0;
  for (; k + kAhead <= blocks; k += kAhead) {
    uint64_t s[kAhead];
#pragma unroll
    for (uint64_t j = 0; j < kAhead; ++j) s[j] = sums[(k + j) * 8 + lane];
#pragma unroll
    for (uint64_t j = 0; j < kAhead; ++j) a = xxh3::ScrambleLane(a + s[j], lane);
  }
  for (; k < blocks; ++k) a = xxh3::ScrambleLane(a + sums[k * 8 + lane], lane);
  acc[lane] = a;
}

__global__ void InitAcc(uint64_t* acc) { acc[threadIdx.x] = xxh3::InitLane(threadIdx.x); }

__global__ void Finish(const uint8_t* data, uint64_t len, const uint64_t* acc, uint64_t* out) {
  *out = len <= xxh3::kShortMax ? xxh3::HashShort(data, len) : xxh3::FinishLong(acc, data, len);
}

// Frees a device allocation on every path out.
struct Scratch {
  void* p = nullptr;
  ~Scratch() {
    if (p) cudaFree(p);
  }
};

}  // namespace

cudaError_t DeviceXxh3(const std::byte* data, uint64_t len, cudaStream_t stream, uint64_t* out) {
  const uint64_t blocks = xxh3::ChainedBlocks(len);
  const uint64_t seg_blocks = blocks < kSegmentBlocks ? blocks : kSegmentBlocks;
  // acc[8], result, then the segment's lane sums.
  Scratch scratch;
  if (cudaError_t e = cudaMalloc(&scratch.p, (9 + seg_blocks * 8) * sizeof(uint64_t)); e) {
    return e;
  }
  uint64_t* acc = static_cast<uint64_t*>(scratch.p);
  uint64_t* result = acc + 8;
  uint64_t* sums = acc + 9;
  const auto* words = reinterpret_cast<const uint64_t*>(data);
  InitAcc<<<1, 8, 0, stream>>>(acc);
  for (uint64_t b = 0; b < blocks; b += seg_blocks) {
    const uint64_t n = blocks - b < seg_blocks ? blocks - b : seg_blocks;
    const auto grid = static_cast<unsigned>((n * 8 + kThreads - 1) / kThreads);
    BlockSums<<<grid, kThreads, 0, stream>>>(words, b, n, sums);
    Chain<<<1, 8, 0, stream>>>(sums, n, acc);
  }
  Finish<<<1, 1, 0, stream>>>(reinterpret_cast<const uint8_t*>(data), len, acc, result);
  if (cudaError_t e = cudaGetLastError(); e) return e;
  if (cudaError_t e =
          cudaMemcpyAsync(out, result, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream);
      e) {
    return e;
  }
  return cudaStreamSynchronize(stream);
}

}  // namespace loadbench::cuda
