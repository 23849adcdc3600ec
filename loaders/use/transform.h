// Transforms a framework applies on load: byteswap (a big-endian file's elements to host
// order) and bf16_to_f32 (widening). Each hashes the bytes it converts as it reads them, so the
// transform pass is also the check that the load delivered the file's bytes.
#pragma once

#include <cstdint>
#include <string>

#include <xxhash.h>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

// Whether `transform` ("byteswap", "bf16_to_f32") can be applied to the file `table`
// describes: byteswap needs a big-endian file of plain (non-block) dtypes, bf16_to_f32 a
// little-endian one. kUnsupported says why not, naming `path`.
Status CheckTransform(const std::string& transform, const TensorTable& table,
                      const std::string& path);

// The tensor as the transform leaves it: dtype and size (bf16 widens to f32, twice the bytes;
// everything else keeps both).
TensorInfo Transformed(const std::string& transform, const TensorInfo& t);

// Hashes the t.size bytes at `src` into `hash` and writes the transformed tensor to `dst`
// (Transformed(t).size bytes). `dst` may equal `src` when the size does not change (in place).
void TransformTensor(const std::string& transform, const TensorInfo& t, const std::byte* src,
                     std::byte* dst, XXH3_state_t* hash);

}  // namespace loadbench
