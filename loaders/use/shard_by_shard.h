// A sharded model under a strategy that loads one file: one loader of the strategy per shard,
// run in shard order, each on its own file and table, holding its memory until the end. The
// views come out in table order, since the table lists its tensors shard by shard.
#pragma once

#include <memory>

#include "loaders/strategy/registry.h"

namespace loadbench {

// The loader of one run of `info` over `table`: the strategy's own for a single file or a
// strategy that loads whole models (kModel), else the shard-by-shard one.
std::unique_ptr<Loader> MakeModelLoader(const StrategyInfo& info, const Params& params,
                                        const TensorTable& table);

}  // namespace loadbench
