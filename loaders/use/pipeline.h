// A load as a framework does it, in the worker's timed region: the strategy brings the tensors
// in (once per model instance, or once for all through the registry), a transform converts
// them, binding points framework tensors at them or copies them, and a consumer uses them.
// With a streaming strategy (layered) all of it happens one layer at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "loaders/blocks/destination.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/consume.h"
#include "loaders/use/model_registry.h"
#include "loaders/use/use.h"

namespace loadbench {

using Clock = std::chrono::steady_clock;

class UsePipeline {
 public:
  UsePipeline(const StrategyInfo& info, const Params& params, const UseOptions& use,
              const std::string& path, const TensorTable& table);
  ~UsePipeline();

  // This reader is one of several, each loading its part of the model (`table` is this one's):
  // the strategy learns what the others load (Loader::SetPart). Call before Run.
  void SetPart(PartPlace place) { part_ = std::move(place); }

  // kUnsupported when the use options cannot apply to this file (a transform its byte order
  // does not allow, forward on big-endian elements without byteswap). Call before Run.
  Status Check() const;

  // Loads, transforms, binds and consumes; the timed work. Errors are the strategy's.
  Status Run();

  // After the timed region: the checksum of the bytes the strategy delivered, one per load or
  // instance, and how it was obtained ("consumer", "transform", "per-layer", or "after": read
  // again here, outside the timed region, from the bound tensors while they are still held).
  void Verify(std::vector<uint64_t>* checksums, std::string* how);

  // After Verify: releases everything the load holds (mappings, buffers, device memory) and
  // returns the run's teardown in seconds: this release, plus what a streaming strategy spent
  // releasing its layers during the load (kept out of the load's time).
  double Release();

  // Timings, from Run.
  Clock::time_point ready() const {
    return ready_;
  }  // every instance's views exist (a
     // streaming strategy: the first layer's)
  Clock::time_point done() const { return done_; }
  std::optional<Clock::time_point> first_use() const { return first_use_; }
  std::optional<double> transform_s() const { return transform_s_; }
  std::optional<double> bind_s() const { return bind_s_; }
  double consume_s() const { return consume_s_; }
  std::optional<double> verify_s() const { return verify_s_; }
  // Time between the start and done() that is not the load's: a streaming strategy's per-layer
  // verification and release, which every other strategy does after the timed region. The
  // load's time is done() - start - kept_out_s().
  double kept_out_s() const { return SpanSeconds(kept_out_); }
  // The load's time itself, from `start` to done() less the kept-out spans, in order: the
  // stretches that wall_s adds up and a profile of the load covers.
  std::vector<TimeSpan> Timed(Clock::time_point start) const;

  uint64_t consume_result() const { return results_.empty() ? 0 : results_.front(); }
  const ConsumeStats& stats() const { return stats_; }
  uint64_t transformed_bytes() const { return transformed_bytes_; }
  size_t loads() const;            // distinct loads the instances hold: 1 when they share
  nlohmann::json Details() const;  // the (first) strategy's Details
  // A device strategy's figures (kDevice): on_device_s, device_verify_s and the byte counts;
  // null for the others.
  nlohmann::ordered_json DeviceJson(Clock::time_point t0) const;

 private:
  struct Model;
  struct Instance;

  Status RunWhole();
  Status RunStreaming();
  Status RunDevice();
  Status LoadModel(std::unique_ptr<Model>* out);
  std::unique_ptr<Loader> MakeLoader() const;  // the strategy's, told this reader's part
  Status TransformInto(const std::vector<size_t>& idx, const std::vector<TensorBytes>& src,
                       std::vector<TensorBytes>* dst, TensorBuffers* out);
  Status Bind(const std::vector<size_t>& idx, const std::vector<TensorBytes>& src,
              std::vector<TensorBytes>* dst, TensorBuffers* copies);
  // Uses `tensors` in `order`, each once `arriving` (the strategy that delivered them, or
  // nullptr) says its bytes are in place.
  Status Consume(Consumer& c, const std::vector<size_t>& order,
                 const std::vector<TensorBytes>& tensors, bool time_first_use, Loader* arriving);
  TensorTable SubTable(const std::vector<size_t>& idx) const;
  BufferKind BindBuffer() const;  // for copies and separate transforms

  const StrategyInfo& info_;
  const Params& params_;
  UseOptions use_;
  std::string path_;
  const TensorTable& table_;
  std::optional<PartPlace> part_;
  TensorTable bound_;  // the tensors as consumed: after the transform
  std::vector<size_t> all_;
  std::vector<bool> first_use_set_;
  size_t first_use_left_ = 0;

  SharedRegistry<Model> registry_;
  std::vector<Instance> instances_;
  std::unique_ptr<Loader> loader_;          // a streaming or device strategy's, held until Release
  std::vector<uint64_t> source_checksums_;  // from the transform or per-layer hashing
  std::vector<uint64_t> results_;           // one consumer result per instance
  std::optional<DeviceLoad> device_;        // kDevice: what the strategy put on the GPU
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> layer_hash_;
  nlohmann::json details_ = nlohmann::json::object();

  Clock::time_point ready_{}, done_{};
  std::optional<Clock::time_point> first_use_;
  std::optional<double> transform_s_, bind_s_, verify_s_;
  double consume_s_ = 0;
  std::vector<TimeSpan> kept_out_;  // in order
  ConsumeStats stats_;
  uint64_t transformed_bytes_ = 0;
};

}  // namespace loadbench
