// Text taken from a weight file (names, keys, values): on its way out into JSON, which must be
// valid UTF-8, and into one-line error messages, which a name holding a newline must not split;
// and the hex values loadbench stores in the metadata of safetensors and GGUF files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loadbench {

// `s` with every invalid UTF-8 byte replaced by U+FFFD.
std::string JsonSafe(std::string_view s);

// `s` as it appears inside a JSON string, without the quotes: control characters, quotes and
// backslashes escaped (\n, \u0001, \"), invalid UTF-8 replaced by U+FFFD.
std::string Printable(std::string_view s);

// Exactly 16 lower-case hex digits, as loadbench writes a checksum or spec id, into *out.
bool ParseHex64(std::string_view text, uint64_t* out);

}  // namespace loadbench
