// Internal to loaders/format: the readers of the sharded forms that ReadModel dispatches to
// (model.h says which forms there are; docs/formats.md, "Sharded models", their rules).
#pragma once

#include <string>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

// realpath(3) of `path` (every link in it followed) into *out; false, with its errno in *err,
// when it fails (ENOENT: missing, or a link to nothing).
bool RealPath(const std::string& path, std::string* out, int* err);

// Why a file whose real path is `real` lies outside the folder whose real path is
// `real_folder` ("the folder itself", "a link to /x", escaped for one line), or "" when it lies
// inside.
std::string OutsideFolder(const std::string& real, const std::string& real_folder);

// The index at `path` (JSON with `weight_map`), its content `text`: every shard it names read,
// checked against it and joined. layout "index".
Status ReadShardIndex(const std::string& path, const std::string& text, TensorTable* out);

// A GGUF file's table whose header says split.count > 1: the first file, or another, of a split.
bool IsGgufSplit(const TensorTable& t);

// The GGUF split whose file `path` (already read as `first`, a GGUF file with split.count > 1)
// must be the first: its siblings read beside it, checked against it and joined. layout
// "gguf-split".
Status ReadGgufSplit(const std::string& path, TensorTable first, TensorTable* out);

}  // namespace loadbench
