#include "loaders/use/consume.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include <xxhash.h>

#include "loaders/format/layers.h"

namespace loadbench {
namespace {

constexpr uintptr_t kAlign = 64;

bool Unaligned(const std::byte* p) { return reinterpret_cast<uintptr_t>(p) % kAlign != 0; }

class ChecksumConsumer final : public Consumer {
 public:
  ChecksumConsumer() : state_(XXH3_createState(), &XXH3_freeState) {
    XXH3_64bits_reset(state_.get());
  }
  void Use(size_t, const TensorInfo&, TensorBytes b) override {
    if (Unaligned(b.data())) ++stats_.unaligned_tensors;
    XXH3_64bits_update(state_.get(), b.data(), b.size());
  }
  uint64_t Result() override { return XXH3_64bits_digest(state_.get()); }

 private:
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state_;
};

// Per-tensor results in table order, digested at the end: the order of use does not matter.
class PerTensorConsumer : public Consumer {
 public:
  explicit PerTensorConsumer(size_t n) : results_(n, 0) {}
  uint64_t Result() override {
    return XXH3_64bits(results_.data(), results_.size() * sizeof(uint64_t));
  }

 protected:
  std::vector<uint64_t> results_;
};

class RandomConsumer final : public PerTensorConsumer {
 public:
  using PerTensorConsumer::PerTensorConsumer;
  void Use(size_t i, const TensorInfo&, TensorBytes b) override {
    if (Unaligned(b.data())) ++stats_.unaligned_tensors;
    results_[i] = XXH3_64bits(b.data(), b.size());
  }
};

// Four fp32 lanes, two accumulators: GCC lowers them to the host's vector instructions (SSE
// on baseline x86-64). Lanes are added in a fixed order and nothing is fused, so equal bytes
// give equal results on every machine this binary runs on.
typedef float F32x4 __attribute__((vector_size(16)));
typedef uint16_t U16x8 __attribute__((vector_size(16)));
typedef uint16_t U16x4 __attribute__((vector_size(8)));
typedef uint32_t U32x4 __attribute__((vector_size(16)));

enum class Decode { kF32, kBF16, kF16, kBytes };

Decode DecodeOf(const std::string& dtype) {
  if (dtype == "f32") return Decode::kF32;
  if (dtype == "bf16") return Decode::kBF16;
  if (dtype == "f16") return Decode::kF16;
  return Decode::kBytes;
}

size_t ElementSize(Decode d) { return d == Decode::kF32 ? 4 : 2; }

// IEEE half to float for every one of the 65536 bit patterns, subnormals and NaNs included.
const std::vector<float>& HalfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
      float v;
      if (exp == 0) {
        v = std::ldexp(static_cast<float>(man), -24);
      } else if (exp == 31) {
        v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
      } else {
        v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
      }
      t[h] = sign ? -v : v;
    }
    return t;
  }();
  return table;
}

inline F32x4 WidenBF16(U16x4 h) {
  const U32x4 w = __builtin_convertvector(h, U32x4) << 16;
  F32x4 v;
  std::memcpy(&v, &w, sizeof v);
  return v;
}

// Eight elements from `p` (any alignment) as two vectors of fp32 lanes.
inline void Load8(Decode d, const std::byte* p, F32x4* lo, F32x4* hi) {
  if (d == Decode::kF32) {
    std::memcpy(lo, p, sizeof *lo);
    std::memcpy(hi, p + sizeof *lo, sizeof *hi);
  } else if (d == Decode::kBF16) {
    U16x8 h;
    std::memcpy(&h, p, sizeof h);
    *lo = WidenBF16(__builtin_shufflevector(h, h, 0, 1, 2, 3));
    *hi = WidenBF16(__builtin_shufflevector(h, h, 4, 5, 6, 7));
  } else {
    const std::vector<float>& half = HalfTable();
    uint16_t h[8];
    std::memcpy(h, p, sizeof h);
    for (int k = 0; k < 4; ++k) (*lo)[k] = half[h[k]], (*hi)[k] = half[h[k + 4]];
  }
}

inline float Load1(Decode d, const std::byte* p) {
  std::byte tmp[32] = {};
  std::memcpy(tmp, p, ElementSize(d));
  F32x4 lo{}, hi{};
  Load8(d, tmp, &lo, &hi);
  return lo[0];
}

class ForwardConsumer final : public PerTensorConsumer {
 public:
  ForwardConsumer(size_t n, bool copy_unaligned)
      : PerTensorConsumer(n), copy_unaligned_(copy_unaligned) {}

  void Use(size_t i, const TensorInfo& t, TensorBytes b) override {
    const std::byte* p = b.data();
    if (Unaligned(p)) {
      ++stats_.unaligned_tensors;
      if (copy_unaligned_ && !b.empty()) {
        if (scratch_size_ < b.size()) {
          scratch_.reset(static_cast<std::byte*>(
              std::aligned_alloc(kAlign, (b.size() + kAlign - 1) / kAlign * kAlign)));
          scratch_size_ = scratch_ ? b.size() : 0;
        }
        if (scratch_) {
          std::memcpy(scratch_.get(), p, b.size());
          stats_.aligned_copies += b.size();
          p = scratch_.get();
        }
      }
    }
    const Decode d = DecodeOf(t.dtype);
    if (d == Decode::kBytes) {
      ++stats_.untyped_tensors;
      results_[i] = SumBytes(p, b.size());
      return;
    }
    const uint64_t count = b.size() / ElementSize(d);
    uint64_t row = t.shape.size() >= 2 ? t.shape.back() : count;
    if (row == 0 || row > (1u << 20)) row = 4096;
    double total = 0;
    for (uint64_t start = 0; start < count; start += row) {
      total += Dot(d, p + start * ElementSize(d), std::min(row, count - start));
    }
    results_[i] = std::bit_cast<uint64_t>(total);
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };

  // The fixed activation vector: small values of both signs, the same for every run.
  const float* X(uint64_t n) {
    while (x_.size() < n) x_.push_back(static_cast<float>((x_.size() * 7919) % 17) / 16.0f - 0.5f);
    return x_.data();
  }

  float Dot(Decode d, const std::byte* p, uint64_t n) {
    const float* x = X(n);
    const size_t es = ElementSize(d);
    F32x4 acc_lo{}, acc_hi{};
    uint64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      F32x4 a{}, b{}, xa, xb;
      Load8(d, p + k * es, &a, &b);
      std::memcpy(&xa, x + k, sizeof xa);
      std::memcpy(&xb, x + k + 4, sizeof xb);
      acc_lo += a * xa;
      acc_hi += b * xb;
    }
    const F32x4 acc = acc_lo + acc_hi;
    float sum = 0;
    for (int lane = 0; lane < 4; ++lane) sum += acc[lane];
    for (; k < n; ++k) sum += Load1(d, p + k * es) * x[k];
    return sum;
  }

  static uint64_t SumBytes(const std::byte* p, size_t n) {
    uint64_t sum = 0, w;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
      std::memcpy(&w, p + k, 8);
      sum += w;
    }
    for (; k < n; ++k) sum += static_cast<uint8_t>(p[k]);
    return sum;
  }

  bool copy_unaligned_;
  std::vector<float> x_;
  std::unique_ptr<std::byte, Free> scratch_;
  size_t scratch_size_ = 0;
};

}  // namespace

std::unique_ptr<Consumer> MakeConsumer(const std::string& name, size_t tensor_count,
                                       bool copy_unaligned) {
  if (name == "forward") return std::make_unique<ForwardConsumer>(tensor_count, copy_unaligned);
  if (name == "random") return std::make_unique<RandomConsumer>(tensor_count);
  return std::make_unique<ChecksumConsumer>();
}

std::vector<size_t> UseOrder(const std::string& consumer, const TensorTable& table,
                             const std::vector<size_t>& indices, bool whole, int64_t seed) {
  if (consumer == "forward" && whole) return ForwardOrder(table);
  std::vector<size_t> order = indices;
  if (consumer == "random") {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    std::shuffle(order.begin(), order.end(), rng);
  }
  return order;
}

}  // namespace loadbench
