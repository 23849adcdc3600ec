// Memory-speed ceilings of a load: memcpy (the copy a read-into-buffer strategy makes once the
// bytes are cached) and the checksum consumer (xxh3 over every tensor byte, run by every load).
// Buffers are written before timing, so no fault is measured here; rates use real time.
#include <cstring>
#include <vector>

#include "harness/bench/bench_util.h"
#include "loaders/format/checksum.h"
#include "loaders/strategy/registry.h"

namespace loadbench::bench {
namespace {

void BM_Memcpy(benchmark::State& state) {
  const size_t len = static_cast<size_t>(state.range(0));
  std::vector<std::byte> src(len, std::byte{0x5a});
  std::vector<std::byte> dst(len, std::byte{0});
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), len);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
// 4 KiB .. 256 MiB in steps of 16: L1, L2, last-level cache, then main memory.
BENCHMARK(BM_Memcpy)
    ->ArgName("bytes")
    ->RangeMultiplier(16)
    ->Range(4 << 10, 256 << 20)
    ->UseRealTime();

// The consumer exactly as loads run it, over one view: the tensor count does not matter at
// this size, the bytes per second do.
void BM_Checksum(benchmark::State& state) {
  const size_t len = static_cast<size_t>(state.range(0));
  std::vector<std::byte> buf(len, std::byte{0x5a});
  const std::vector<TensorBytes> views = {TensorBytes(buf.data(), buf.size())};
  for (auto _ : state) benchmark::DoNotOptimize(ChecksumTensors(views));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
// 1 MiB stays in cache (the hash's own speed); 256 MiB streams from memory (what a load sees).
BENCHMARK(BM_Checksum)->ArgName("bytes")->Arg(1 << 20)->Arg(256 << 20)->UseRealTime();

}  // namespace
}  // namespace loadbench::bench
