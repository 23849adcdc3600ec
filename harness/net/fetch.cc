#include "harness/net/fetch.h"

#include <chrono>
#include <memory>

#include "loaders/remote/ranges.h"
#include "loaders/remote/url.h"

namespace loadbench {

Status FetchIntoNothing(const std::vector<std::string>& names, const std::vector<uint64_t>& sizes,
                        int concurrency, uint64_t chunk, FetchResult* out) {
  std::vector<std::unique_ptr<std::byte[]>> buffers;
  std::vector<std::byte*> free;
  for (int i = 0; i < concurrency; ++i) {  // touched now, not in the time
    buffers.push_back(std::make_unique<std::byte[]>(chunk));
    free.push_back(buffers.back().get());
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<RemoteObject> objects(names.size());
  std::vector<std::string> etags(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    ObjectHead head;
    LB_RETURN_IF_ERROR(OpenObject(names[i], sizes[i], &objects[i], &head, &out->stats));
    etags[i] = head.etag;
  }
  size_t object = 0;
  uint64_t at = 0;
  const auto next = [&](RangeRequest* r) {
    while (object < names.size() && at >= sizes[object]) object++, at = 0;
    if (object == names.size() || free.empty()) return false;
    *r = {object, at, std::min(chunk, sizes[object] - at), free.back()};
    free.pop_back();
    at += r->len;
    return true;
  };
  const auto done = [&](const RangeRequest& r) {
    free.push_back(r.dst);
    out->bytes += r.len;
    return Status::Ok();
  };
  RangeRunner runner{objects, etags, concurrency, Timeouts{}, &out->stats};
  LB_RETURN_IF_ERROR(runner.Run(next, done));
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

}  // namespace loadbench
