// The checksum a file stores: the xxh3-64 of every tensor's bytes in table order, computed over
// loaded views (how a run verifies what it delivered) or read from the file (the reference).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loaders/base/byte_source.h"
#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

// Over the bytes of each tensor, in order (a view is loaders/strategy/strategy.h's TensorBytes).
uint64_t ChecksumTensors(const std::vector<std::span<const std::byte>>& views);

// The same checksum read straight from the file (plain preads, or ranged GETs of a remote
// object), in table order: the reference a file without a stored checksum is checked against.
Status ChecksumFile(const ByteSource& src, const TensorTable& table, uint64_t* out);

// The same over a model: each tensor read from its shard's file, in table order. For a single
// file it equals ChecksumFile; a model has the same checksum sharded or not.
Status ChecksumModel(const TensorTable& model, uint64_t* out);

}  // namespace loadbench
