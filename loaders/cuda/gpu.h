// The GPU as the CUDA strategies see it, for the parts of loadbench built without CUDA's headers
// (the probe, env.json): whether one is usable and why not, what it is, and timed copies into
// it. In a build without the CUDA toolkit every answer says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench::gpu {

// Empty when the CUDA strategies can use a GPU here, else why not: not built, no driver, no
// device.
std::string UnsupportedReason();

// The device the CUDA strategies use: name, memory, compute capability, driver and runtime
// versions; null when there is none.
nlohmann::ordered_json Info();

// Creates the CUDA context of this process (cudaFree(nullptr)) and says how long it took: a
// worker does it before its timed region, since a serving process pays it once at start-up, not
// per load.
Status Warm(double* seconds);

// Host-to-device copies of one buffer with cudaMemcpy: from pinned (cudaHostAlloc) or pageable
// (malloc, faulted in beforehand) host memory. The two ceilings a device load is held against.
class CopyBench {
 public:
  CopyBench();
  ~CopyBench();
  CopyBench(const CopyBench&) = delete;
  CopyBench& operator=(const CopyBench&) = delete;
  // kUnsupported without a GPU.
  Status Init(bool pinned, uint64_t bytes);
  // One timed copy of the whole buffer, waited for.
  Status Copy(double* seconds);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loadbench::gpu
