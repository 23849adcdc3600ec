// The engine of the ranged strategies (http_ranges, http_stream): byte ranges of one object
// fetched with up to `concurrency` GETs in flight on one libcurl multi handle (connections are
// kept and reused within the load, never across runs: each run is a process of its own), each
// written straight into its place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/remote/http.h"
#include "loaders/remote/url.h"

namespace loadbench {

// One ranged GET: [offset, offset + len) of object `object` (an index into the runner's) into
// dst.
struct RangeRequest {
  size_t object = 0;
  uint64_t offset = 0;
  uint64_t len = 0;
  std::byte* dst = nullptr;
};

// [begin, end) of object `object` cut into requests of at most `chunk` bytes, written from
// `dst` on.
std::vector<RangeRequest> ChunkRange(size_t object, uint64_t begin, uint64_t end, uint64_t chunk,
                                     std::byte* dst);

// The object `path` names, resolved and HEADed (the source of its credentials noted in `stats`):
// kIOError naming it when its size is no longer `size`, the size its table was read with.
Status OpenObject(const std::string& path, uint64_t size, RemoteObject* obj, ObjectHead* head,
                  TransferStats* stats);

// Runs requests in flight, at most `concurrency` at a time, in the order `next` hands them out
// (it returns false when it has none to give now; `next` is asked again as requests end).
// `done` is called after each request that delivered all its bytes, in completion order. A
// request answered 500, 502, 503 or 504 is made again after its wait (loaders/remote/http.h,
// kHttpTries), the others going on meanwhile. The first failure stops every request and is
// returned.
struct RangeRunner {
  const std::vector<RemoteObject>& objects;
  const std::vector<std::string>& etags;  // what each object must still be
  int concurrency = 8;
  Timeouts timeouts;
  TransferStats* stats = nullptr;

  Status Run(const std::function<bool(RangeRequest*)>& next,
             const std::function<Status(const RangeRequest&)>& done) const;
};

}  // namespace loadbench
