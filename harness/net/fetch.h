// The server's own limit: a model's objects fetched from its server with `concurrency` ranged
// GETs in flight (loaders/remote/ranges.h, the engine of http_ranges), each into one of
// `concurrency` buffers that are used again and again, so that nothing is kept and no new
// memory is faulted in: what is measured is the server and the link, not the reader's memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/remote/http.h"

namespace loadbench {

struct FetchResult {
  uint64_t bytes = 0;
  double seconds = 0;  // from the first HEAD to the last byte
  TransferStats stats;
};

// Fetches every byte of `names` (s3:// or http(s):// objects of the sizes in `sizes`) in
// requests of `chunk` bytes, `concurrency` at a time. Errors name the object and the reason.
Status FetchIntoNothing(const std::vector<std::string>& names, const std::vector<uint64_t>& sizes,
                        int concurrency, uint64_t chunk, FetchResult* out);

}  // namespace loadbench
