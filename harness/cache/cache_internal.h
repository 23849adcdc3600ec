// Internals of harness/cache/cache.cc exposed for tests: force one residency method or one drop
// method, so that tests can check that both agree and that each works on its own.
#pragma once

#include <string>

#include "harness/cache/cache.h"
#include "loaders/base/status.h"

namespace loadbench::cache_internal {

enum class ResidencyImpl {
  kAuto,       // what MeasureResidency does: cachestat where available, else mincore
  kCachestat,  // cachestat(2) only; kUnsupported where the kernel or seccomp refuses it
  kMincore,    // mincore(2) over a PROT_READ MAP_SHARED mapping, in pieces
};

Status MeasureResidencyWith(ResidencyImpl impl, const std::string& path, Residency* out);

// True when cachestat(2) can be called here (probed once, then cached).
bool CachestatAvailable();

// DropFileCache with drop_caches optionally disabled: with `try_drop_caches` false only the
// per-file fadvise path runs, whatever our privileges, and `used` is kFadvise.
Status DropFileCacheImpl(const std::string& path, bool try_drop_caches, DropMethod* used);

}  // namespace loadbench::cache_internal
