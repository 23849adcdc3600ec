// Header parse time against tensor count, for every format: a file of N small tensors is
// written by the format's own encoder, then ReadTensorTable parses it from the page cache on
// an open fd, as every load starts. A new format adds its writer and one line to kFormats.
// One more: a GGUF whose metadata holds a llama-2 vocabulary of 32,000 tokens.
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/bench/bench_util.h"
#include "harness/gen/generator.h"
#include "loaders/format/format.h"
#include "loaders/format/gguf.h"
#include "loaders/format/safetensors.h"
#include "loaders/format/wlf.h"

namespace loadbench::bench {
namespace {

// Writes a complete, valid file of `tensor_count` small tensors to the empty file `fd`.
using FormatWriter = Status (*)(int fd, const std::string& path, size_t tensor_count);

// Layer-style names, so the names cost what real ones do; 64-byte bf16 tensors, so the header,
// not the data, is most of the file.
constexpr WlfDType kDType = WlfDType::kBF16;
constexpr uint64_t kSeed = 1;

std::vector<WlfTensorSpec> SmallTensors(size_t tensor_count) {
  std::vector<WlfTensorSpec> specs;
  specs.reserve(tensor_count);
  for (size_t i = 0; i < tensor_count; ++i) {
    specs.push_back({fmt::format("blk.{}.ffn_up.{}.weight", i / 8, i % 8), kDType, {4, 8}});
  }
  return specs;
}

// Writes `head` and the tensors' bytes where `layout` puts them, zero bytes between.
Status WriteFile(int fd, const std::string& path, const FileLayout& layout,
                 const std::vector<std::byte>& head) {
  std::vector<std::byte> file(layout.file_size);
  std::memcpy(file.data(), head.data(), head.size());
  for (size_t i = 0; i < layout.tensor_offsets.size(); ++i) {
    FillTensorBytes(kSeed, i, kDType, 0, file.data() + layout.tensor_offsets[i],
                    layout.tensor_sizes[i]);
  }
  return PwriteExact(fd, path, file.data(), file.size(), 0);
}

Status WriteWlf(int fd, const std::string& path, size_t tensor_count) {
  const std::vector<WlfTensorSpec> specs = SmallTensors(tensor_count);
  FileLayout layout;
  LB_RETURN_IF_ERROR(PlanWlf(specs, kWlfMinTensorAlign, &layout));
  // The checksum field is not read by the parse; any value will do.
  std::vector<std::byte> head = EncodeWlfHead(specs, layout, 0, 0, 0);
  head.resize(layout.file_size);
  const WlfTail tail = EncodeWlfTail(layout);
  std::memcpy(head.data() + layout.data_end, &tail, sizeof tail);
  return WriteFile(fd, path, layout, head);
}

Status WriteSafetensors(int fd, const std::string& path, size_t tensor_count) {
  FileLayout layout;
  std::vector<std::byte> head;
  LB_RETURN_IF_ERROR(
      EncodeSafetensorsHead(SmallTensors(tensor_count), {{"format", "pt"}}, &layout, &head));
  return WriteFile(fd, path, layout, head);
}

Status WriteGguf(int fd, const std::string& path, size_t tensor_count) {
  FileLayout layout;
  std::vector<std::byte> head;
  LB_RETURN_IF_ERROR(EncodeGgufHead(SmallTensors(tensor_count),
                                    {GgufString("general.architecture", "llama")},
                                    kGgufDefaultAlignment, &layout, &head));
  return WriteFile(fd, path, layout, head);
}

// A GGUF as llama.cpp's converter writes a llama-2 model's header: a 32,000-token vocabulary
// (tokens, f32 scores, i32 token types) in the metadata, `tensor_count` tensor infos.
Status WriteGgufWithVocab(int fd, const std::string& path, size_t tensor_count) {
  constexpr uint32_t kVocab = 32000;
  std::vector<std::string> tokens;
  std::vector<std::byte> scores(kVocab * sizeof(float)), types(kVocab * sizeof(int32_t));
  for (uint32_t i = 0; i < kVocab; ++i) {
    tokens.push_back(i < 259 ? fmt::format("<0x{:02X}>", i & 0xFF) : fmt::format("\u2581tok{}", i));
    const float score = -static_cast<float>(i);
    const int32_t type = i < 3 ? 3 : (i < 259 ? 6 : 1);
    std::memcpy(scores.data() + i * sizeof score, &score, sizeof score);
    std::memcpy(types.data() + i * sizeof type, &type, sizeof type);
  }
  FileLayout layout;
  std::vector<std::byte> head;
  LB_RETURN_IF_ERROR(EncodeGgufHead(SmallTensors(tensor_count),
                                    {GgufString("general.architecture", "llama"),
                                     GgufString("tokenizer.ggml.model", "llama"),
                                     GgufStringArray("tokenizer.ggml.tokens", tokens),
                                     GgufArray("tokenizer.ggml.scores", 6, kVocab, scores),
                                     GgufArray("tokenizer.ggml.token_type", 5, kVocab, types)},
                                    kGgufDefaultAlignment, &layout, &head));
  return WriteFile(fd, path, layout, head);
}

struct Format {
  const char* name;
  FormatWriter write;
};
constexpr Format kFormats[] = {
    {"wlf", WriteWlf},
    {"safetensors", WriteSafetensors},
    {"gguf", WriteGguf},
};
// llama-2-7b has 291 tensors.
constexpr Format kGgufVocab = {"gguf_vocab32000", WriteGgufWithVocab};

void BM_ParseHeader(benchmark::State& state, const Format& format) {
  const size_t tensor_count = static_cast<size_t>(state.range(0));
  UniqueFd fd;
  std::string path;
  Status s = OpenScratchFile(&fd, &path);
  if (s.ok()) s = format.write(fd.get(), path, tensor_count);
  uint64_t file_bytes = 0;
  if (s.ok()) s = FileSize(fd.get(), path, &file_bytes);
  if (!s.ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  uint64_t header_bytes = 0;
  for (auto _ : state) {
    TensorTable table;  // built and freed inside the loop: a load pays for both
    s = ReadTensorTable(FileSource(fd.get(), path, file_bytes), &table);
    if (!s.ok() || table.tensors.size() != tensor_count) {
      state.SkipWithError(s.ok() ? fmt::format("{}: parsed {} tensors, wrote {}", path,
                                               table.tensors.size(), tensor_count)
                                       .c_str()
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
    benchmark::RegisterBenchmark(fmt::format("BM_ParseHeader/{}", f.name).c_str(), BM_ParseHeader,
                                 f)
        ->ArgName("tensors")
        ->Arg(10)
        ->Arg(100)
        ->Arg(1000)
        ->Arg(10000)
        ->Arg(20000)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark(fmt::format("BM_ParseHeader/{}", kGgufVocab.name).c_str(),
                               BM_ParseHeader, kGgufVocab)
      ->ArgName("tensors")
      ->Arg(291)
      ->UseRealTime();
  return true;
}();

}  // namespace
}  // namespace loadbench::bench
