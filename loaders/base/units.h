// Byte sizes as people write them ("2GiB", "512MiB", "4096", "1.5GB") and as tables show them.
#pragma once

#include <cstdint>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

// Accepts an integer or decimal with an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024)
// or KB, MB, GB, TB (powers of 1000); K, M, G, T mean the binary units. Case-insensitive.
// kBadInput names `what` and the text when it is not a size or overflows 64 bits.
Status ParseBytes(const std::string& text, const std::string& what, uint64_t* out);

// "2.00 GiB", "512 KiB", "17 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace loadbench
