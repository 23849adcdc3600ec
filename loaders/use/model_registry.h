// The registry through which model instances in one process share a load: instances that ask
// for the same key get the same object, built once, and it is destroyed (its mapping unmapped,
// its buffers freed) when the last instance lets go. Without it, two instances of one model
// map or read the file twice.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

template <typename T>
class SharedRegistry {
 public:
  // The live object for `key`, or a new one from `make`; calls are serialized, so two
  // instances asking at once build one object. `*shared` tells whether an existing object was
  // returned. `make`'s error is returned as it is, and nothing is kept.
  Status Acquire(const std::string& key, const std::function<Status(std::unique_ptr<T>*)>& make,
                 std::shared_ptr<T>* out, bool* shared = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = live_.find(key); it != live_.end()) {
      if (std::shared_ptr<T> p = it->second.lock()) {
        *out = std::move(p);
        if (shared) *shared = true;
        return Status::Ok();
      }
    }
    std::unique_ptr<T> made;
    LB_RETURN_IF_ERROR(make(&made));
    std::shared_ptr<T> p(made.release());
    live_[key] = p;
    *out = std::move(p);
    if (shared) *shared = false;
    return Status::Ok();
  }

  // How many keys still have a live object.
  size_t Live() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [key, weak] : live_) n += weak.expired() ? 0 : 1;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::weak_ptr<T>> live_;
};

}  // namespace loadbench
