// Format detection: reads the first bytes of a file and hands it to the reader of its format.
#pragma once

#include <string>

#include "loaders/base/byte_source.h"
#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

// Reads and validates the header of the weight file `src` reads (a local file or a remote
// object), detecting its format from the content (never from the name): WLF and GGUF by their
// magic at byte 0, safetensors by the '{' that opens its JSON header at byte 8. Reads only what
// the header needs: no byte of the file is mapped or touched outside the header before every
// field has been validated. On failure returns kBadInput with a one-line message that starts
// with the source's name and says what is wrong and where.
Status ReadTensorTable(const ByteSource& src, TensorTable* out);

// Opens `path` (a local path, or an s3:// or http(s):// URL: loaders/remote/source.h) and calls
// ReadTensorTable.
Status ReadTensorTableFromPath(const std::string& path, TensorTable* out);

}  // namespace loadbench
