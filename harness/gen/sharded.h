// Inside harness/gen: Generate for a sharded plan (shards.h plans it).
#pragma once

#include "harness/gen/encoder.h"
#include "harness/gen/generator.h"

namespace loadbench {

// Every shard written under a temporary name (the first shard's head last: a GGUF split's
// first file holds the model's checksum), then the index; only when all are complete are they
// renamed, the shards from the last to the first, then the index, so that the model's path
// names a complete model or nothing new. A model already there, complete and of the same
// spec, is kept.
Status GenerateSharded(const GenOptions& opts, const GenEncoder& encoder, const GenPlan& plan,
                       GenResult* result);

}  // namespace loadbench
