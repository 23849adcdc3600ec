// What the strategies that read one remote object into one buffer (http_get, http_ranges) share:
// the object opened and its buffer allocated, and the transfer's figures and the object's ETag
// in the run's `details`.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "loaders/blocks/destination.h"
#include "loaders/remote/ranges.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {

class ObjectLoader : public Loader {
 public:
  explicit ObjectLoader(const Params& params) : kind_(BufferKindOf(params)) {}

  nlohmann::json Details() const override {
    nlohmann::json d = stats_.ToJson();
    d["etag"] = etag_;
    return d;
  }

 protected:
  // Opens the object at `path` (its size checked against `expected_size`) into `obj` and `head`
  // and keeps its ETag.
  Status Open(const std::string& path, uint64_t expected_size, RemoteObject* obj,
              ObjectHead* head) {
    LB_RETURN_IF_ERROR(OpenObject(path, expected_size, obj, head, &stats_));
    etag_ = head->etag;
    return Status::Ok();
  }
  // region_, `bytes` long, of the strategy's buffer kind.
  Status Allocate(uint64_t bytes, const std::string& path) {
    return Region::Allocate(kind_, bytes, path, &region_);
  }

  Region region_;
  TransferStats stats_;

 private:
  BufferKind kind_;
  std::string etag_;
};

}  // namespace loadbench
