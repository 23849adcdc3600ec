// Inside harness/gen: whether what is already at a plan's names is what the plan would write,
// so that `gen` keeps it instead of writing it again. A file is recognised by the spec id this
// generator stores in it (GenPlan::spec_id), with its size and tensor count.
#pragma once

#include <string>

#include "harness/gen/encoder.h"
#include "harness/gen/generator.h"

namespace loadbench {

// True when `out` is a complete file that this generator wrote from `plan`'s spec; *r then
// describes it.
bool ReuseExisting(const std::string& out, const GenPlan& plan, GenResult* r);

// True when every shard of `plan` (and its index) is there, complete, written from its spec:
// the index exactly the one this plan writes, with the model's checksum (or, without an
// index, the first shard holding it under the encoder's key). *r then has the model's bytes
// and checksum.
bool ReuseSharded(const GenEncoder& encoder, const GenPlan& plan, GenResult* r);

}  // namespace loadbench
