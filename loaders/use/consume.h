// Consumers: what uses the tensors once they are bound, and so defines when a load is complete.
// checksum reads every byte once in table order (the file's checksum); forward is a first-token
// proxy that computes with every row of every weight matrix; random reads whole tensors in a
// seeded random order, as a server warmed by its request pattern does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loaders/format/tensor_table.h"
#include "loaders/strategy/registry.h"

namespace loadbench {

// How often a consumer met a tensor it could not compute with as typed, or one that is not
// 64-byte aligned in memory.
struct ConsumeStats {
  uint64_t untyped_tensors = 0;    // forward: a dtype it does not decode (quantized blocks,
                                   // integers), whose bytes it sums instead
  uint64_t unaligned_tensors = 0;  // data not on a 64-byte boundary
  uint64_t aligned_copies = 0;     // forward with unaligned=copy: bytes copied to aligned memory
};

class Consumer {
 public:
  virtual ~Consumer() = default;
  // Uses tensor `index` of the table; `t` describes the bytes as bound (after a transform its
  // dtype and size are the transformed ones).
  virtual void Use(size_t index, const TensorInfo& t, TensorBytes bytes) = 0;
  // A digest of everything used: equal for equal bytes, whatever the strategy or the order the
  // tensors came in (checksum, whose digest is the file's checksum, needs table order).
  virtual uint64_t Result() = 0;
  const ConsumeStats& stats() const { return stats_; }

 protected:
  ConsumeStats stats_;
};

// `name` is checksum, forward or random; `tensor_count` the table's; `copy_unaligned` is
// forward's unaligned=copy.
std::unique_ptr<Consumer> MakeConsumer(const std::string& name, size_t tensor_count,
                                       bool copy_unaligned);

// The order `indices` (ascending table indices) are used in by `consumer`: table order for
// checksum, the forward pass's order (layers.h) for forward when `whole` (every tensor of the
// table at once), and a shuffle by `seed` for random.
std::vector<size_t> UseOrder(const std::string& consumer, const TensorTable& table,
                             const std::vector<size_t>& indices, bool whole, int64_t seed);

}  // namespace loadbench
