// Test support: a model file as `loadbench gen` writes it, and one worker's record of a load,
// for the tests under loaders/, which include no harness header.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace loadbench::test {

struct ModelFile {
  std::string path;
  std::string format = "wlf";    // wlf, safetensors or gguf
  std::string preset = "llama";  // a preset of `loadbench gen`
  uint64_t size = 2ull << 20;    // bytes, about
  uint64_t seed = 1;
  std::string endian = "little";  // "big": WLF only
};

// Writes `m` with one generator thread; throws std::runtime_error naming the path and the reason
// when the generator refuses.
void WriteModel(const ModelFile& m);

// One worker's record (as JSON) of loading `file` with `strategy` ("pread:chunk=5"), run as
// `loadbench run` runs it, in a child process.
nlohmann::ordered_json WorkerRecord(const std::string& file, const std::string& strategy);

}  // namespace loadbench::test
