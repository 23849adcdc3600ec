// The format-independent result of reading a weight file's header: where every tensor's bytes
// are. Formats (WLF, safetensors, GGUF) produce it; strategies consume it.
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
  std::string format;            // "wlf", "safetensors", "gguf"
  uint64_t file_size = 0;        // bytes, as validated against the real file
  uint64_t data_offset = 0;      // start of the data area
  uint64_t tensor_bytes = 0;     // sum of all tensor sizes
  std::optional<uint64_t> expected_checksum;  // xxh3-64 over all tensor bytes in table order
  // Tensor elements are stored big-endian (a WLF file written with `gen --endian big`): a
  // consumer that computes with them must byte-swap them first (the `byteswap` transform).
  bool big_endian = false;
  nlohmann::ordered_json header;  // format-specific header fields, for `inspect`
  std::vector<TensorInfo> tensors;
};

// Where a writer puts everything in a new file: each format's planner fills it and the
// generator writes by it. Offsets are absolute.
struct FileLayout {
  uint64_t align = 4096;     // tensor alignment (1 where the format has none)
  uint64_t data_offset = 0;  // the head, [0, data_offset), is the format's header
  uint64_t data_end = 0;     // the generator writes tensors and zero padding up to here
  uint64_t file_size = 0;    // data_end plus any trailer (WLF's tail sentinel)
  std::vector<uint64_t> tensor_offsets;
  std::vector<uint64_t> tensor_sizes;
};

}  // namespace loadbench
