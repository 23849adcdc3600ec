// Header parse time against tensor count, for every format: a file of N small tensors is
// written by the format's own encoder, then ReadTensorTable parses it from the page cache on
// an open fd, as every load starts. A new format adds its writer and one line to kFormats.
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/bench/bench_util.h"
#include "harness/gen/generator.h"
#include "loaders/checksum.h"
#include "loaders/format/format.h"
#include "loaders/format/wlf.h"

namespace loadbench::bench {
namespace {

// Writes a complete, valid file of `tensor_count` small tensors to the empty file `fd`.
using FormatWriter = Status (*)(int fd, const std::string& path, size_t tensor_count);

// Layer-style names, so the names cost what real ones do; 64-byte bf16 tensors, so the header,
// not the data, is most of the file.
Status WriteWlf(int fd, const std::string& path, size_t tensor_count) {
  constexpr WlfDType kDType = WlfDType::kBF16;
  constexpr uint64_t kSeed = 1;
  std::vector<WlfTensorSpec> specs;
  specs.reserve(tensor_count);
  for (size_t i = 0; i < tensor_count; ++i) {
    specs.push_back({fmt::format("blk.{}.ffn_up.{}.weight", i / 8, i % 8), kDType, {4, 8}});
  }
  FileLayout layout;
  LB_RETURN_IF_ERROR(PlanWlf(specs, kWlfMinTensorAlign, &layout));
  std::vector<std::byte> file(layout.file_size);  // zero: padding is zero bytes
  std::vector<TensorBytes> views;
  views.reserve(tensor_count);
  for (size_t i = 0; i < tensor_count; ++i) {
    std::byte* data = file.data() + layout.tensor_offsets[i];
    FillTensorBytes(kSeed, i, kDType, 0, data, layout.tensor_sizes[i]);
    views.emplace_back(data, layout.tensor_sizes[i]);
  }
  const std::vector<std::byte> head =
      EncodeWlfHead(specs, layout, kWlfFlagChecksum, ChecksumTensors(views), /*gen_spec_id=*/0);
  std::memcpy(file.data(), head.data(), head.size());
  const WlfTail tail = EncodeWlfTail(layout);
  std::memcpy(file.data() + layout.data_end, &tail, sizeof tail);
  return PwriteExact(fd, path, file.data(), file.size(), 0);
}

struct Format {
  const char* name;
  FormatWriter write;
};
constexpr Format kFormats[] = {
    {"wlf", WriteWlf},
};

void BM_ParseHeader(benchmark::State& state, const Format& format) {
  const size_t tensor_count = static_cast<size_t>(state.range(0));
  UniqueFd fd;
  std::string path;
  Status s = OpenScratchFile(&fd, &path);
  if (s.ok()) s = format.write(fd.get(), path, tensor_count);
  if (!s.ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  uint64_t header_bytes = 0;
  for (auto _ : state) {
    TensorTable table;  // built and freed inside the loop: a load pays for both
    s = ReadTensorTable(fd.get(), path, &table);
    if (!s.ok() || table.tensors.size() != tensor_count) {
      state.SkipWithError(s.ok() ? fmt::format("{}: parsed {} tensors, wrote {}", path,
                                               table.tensors.size(), tensor_count).c_str()
                                 : s.message().c_str());
      break;
    }
    header_bytes = table.data_offset;
    benchmark::DoNotOptimize(table);
  }
  using benchmark::Counter;
  state.counters["tensors_per_s"] =
      Counter(static_cast<double>(tensor_count), Counter::kIsIterationInvariantRate);
  state.counters["header_bytes"] = static_cast<double>(header_bytes);
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const Format& f : kFormats) {
    benchmark::RegisterBenchmark(fmt::format("BM_ParseHeader/{}", f.name).c_str(),
                                 BM_ParseHeader, f)
        ->ArgName("tensors")
        ->Arg(10)
        ->Arg(100)
        ->Arg(1000)
        ->Arg(10000)
        ->Arg(20000)
        ->UseRealTime();
  }
  return true;
}();

}  // namespace
}  // namespace loadbench::bench
