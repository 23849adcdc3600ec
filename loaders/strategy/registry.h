// The registered strategies: every one this binary was built with, found by name, and why a
// name is not among them.
#pragma once

#include <string>
#include <vector>

#include "loaders/strategy/strategy.h"

namespace loadbench {

// Why `info` cannot load the model at `path`: a remote strategy given a local file, or a local
// strategy given an s3:// or http(s):// name (which a FUSE mount of the bucket turns into a
// local path); empty when it can.
std::string FileKindMismatch(const StrategyInfo& info, const std::string& path);

// Every registered strategy, sorted by name.
std::vector<const StrategyInfo*> Strategies();
// nullptr when no strategy has this name.
const StrategyInfo* FindStrategy(const std::string& name);

// Why a strategy of this name is not in this build: "strategy 'cuda_bounce' is not built: no
// CUDA compiler ..." for the CUDA strategies of a build without the toolkit, else "strategy 'x'
// does not exist in this build".
std::string NotBuiltReason(const std::string& name);
// The reason the CUDA strategies were left out of this build; empty when they are in it.
std::string CudaNotBuiltReason();

}  // namespace loadbench
