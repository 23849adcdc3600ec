// The format-independent result of reading a weight file's header: where every tensor's bytes
// are. Formats (WLF, later safetensors and GGUF) produce it; strategies consume it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench {

struct TensorInfo {
  std::string name;
  std::string dtype;            // lower-case name: "bf16", "f16", "f32", ...
  std::vector<uint64_t> shape;  // outermost dimension first
  uint64_t offset = 0;          // absolute byte offset in the file
  uint64_t size = 0;            // bytes
};

struct TensorTable {
  std::string format;            // "wlf"
  uint64_t file_size = 0;        // bytes, as validated against the real file
  uint64_t data_offset = 0;      // start of the data area
  uint64_t tensor_bytes = 0;     // sum of all tensor sizes
  std::optional<uint64_t> expected_checksum;  // xxh3-64 over all tensor bytes in table order
  nlohmann::ordered_json header;  // format-specific header fields, for `inspect`
  std::vector<TensorInfo> tensors;
};

}  // namespace loadbench
