// The checksum consumer: reads every byte of every tensor once, in table order, and computes
// the xxh3-64 the file stores. Running it is what makes a load complete.
#pragma once

#include <cstdint>
#include <vector>

#include "loaders/loader.h"

namespace loadbench {

uint64_t ChecksumTensors(const std::vector<TensorBytes>& views);

}  // namespace loadbench
