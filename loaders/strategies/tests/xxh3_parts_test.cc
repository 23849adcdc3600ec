#include "loaders/cuda/xxh3_parts.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "loaders/format/checksum.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"

namespace loadbench::xxh3 {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Bytes in 8-byte words, so that the long path can read them as the GPU does.
class Bytes {
 public:
  explicit Bytes(uint64_t len) : words_((len + 7) / 8 + 1), len_(len) {}
  static Bytes Random(uint64_t len, uint64_t seed) {
    Bytes b(len);
    std::mt19937_64 rng(seed);
    for (uint64_t& w : b.words_) w = rng();
    return b;
  }
  static Bytes Filled(uint64_t len, uint8_t value) {
    Bytes b(len);
    for (uint64_t i = 0; i < len; ++i) b.data()[i] = value;
    return b;
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words_.data()); }
  const uint64_t* words() const { return words_.data(); }
  uint64_t size() const { return len_; }

 private:
  std::vector<uint64_t> words_;
  uint64_t len_;
};

uint64_t Reference(const uint8_t* p, uint64_t len) { return XXH3_64bits(p, len); }

// What a GPU does: every (block, lane) sum on its own, in any order, then one chain per lane
// through the scrambles, then the tail.
uint64_t ByLanes(const Bytes& in, const uint8_t* tail_data) {
  const uint64_t blocks = ChainedBlocks(in.size());
  std::vector<uint64_t> sums(blocks * 8);
  for (uint64_t i = sums.size(); i-- > 0;) {
    sums[i] = BlockLane(in.words() + i / 8 * (kBlockBytes / 8), static_cast<int>(i % 8));
  }
  uint64_t acc[8];
  for (int lane = 0; lane < 8; ++lane) {
    acc[lane] = InitLane(lane);
    for (uint64_t b = 0; b < blocks; ++b) {
      acc[lane] = ScrambleLane(acc[lane] + sums[b * 8 + lane], lane);
    }
  }
  return FinishLong(acc, tail_data, in.size());
}

TEST(Xxh3Parts, EveryLengthUpTo2100MatchesLibxxhash) {
  Bytes in = Bytes::Random(2100, 1);
  for (uint64_t len = 0; len <= 2100; ++len) {
    ASSERT_EQ(Hash(in.data(), len), Reference(in.data(), len)) << "len " << len;
  }
}

TEST(Xxh3Parts, ShortInputsNeedNoAlignment) {
  Bytes in = Bytes::Random(kShortMax + 8, 2);
  for (uint64_t shift = 1; shift < 8; ++shift) {
    for (uint64_t len = 0; len <= kShortMax; ++len) {
      ASSERT_EQ(HashShort(in.data() + shift, len), Reference(in.data() + shift, len))
          << "len " << len << " at +" << shift;
    }
  }
}

TEST(Xxh3Parts, LongInputsMatchLibxxhash) {
  for (uint64_t len :
       {3 * kBlockBytes, 3 * kBlockBytes + 1, 3 * kBlockBytes + 63, 3 * kBlockBytes + 64,
        3 * kBlockBytes + 65, 64 * kBlockBytes - 1, kMiB + 13}) {
    Bytes in = Bytes::Random(len, len);
    EXPECT_EQ(Hash(in.data(), len), Reference(in.data(), len)) << "len " << len;
  }
}

TEST(Xxh3Parts, ConstantInputsMatchLibxxhash) {
  for (uint8_t value : {uint8_t{0}, uint8_t{0xFF}}) {
    Bytes in = Bytes::Filled(kMiB + 13, value);
    for (uint64_t len = 0; len <= 2100; ++len) {
      ASSERT_EQ(Hash(in.data(), len), Reference(in.data(), len))
          << "len " << len << " of " << int{value};
    }
    EXPECT_EQ(Hash(in.data(), in.size()), Reference(in.data(), in.size())) << int{value};
  }
}

TEST(Xxh3Parts, LaneByLaneEqualsHash) {
  for (uint64_t len : {kShortMax + 1, kBlockBytes - 1, kBlockBytes, kBlockBytes + 1,
                       kBlockBytes + 63, kBlockBytes + 64, kBlockBytes + 65, 2 * kBlockBytes,
                       2 * kBlockBytes + 1, 5 * kBlockBytes + 777, kMiB + 13}) {
    Bytes in = Bytes::Random(len, len + 7);
    const uint64_t want = Reference(in.data(), len);
    EXPECT_EQ(Hash(in.data(), len), want) << "len " << len;
    EXPECT_EQ(ByLanes(in, in.data()), want) << "len " << len;
  }
}

// FinishLong's contract names the bytes it reads; a copy with every other byte spoiled must
// give the same hash.
TEST(Xxh3Parts, FinishLongReadsOnlyTheTail) {
  for (uint64_t len : {kShortMax + 1, kBlockBytes + 1, kBlockBytes + 64, kBlockBytes + 65,
                       3 * kBlockBytes, 3 * kBlockBytes + 500}) {
    Bytes in = Bytes::Random(len, len);
    Bytes spoiled = in;
    const uint64_t first = std::min(ChainedBlocks(len) * kBlockBytes, len - kStripeBytes);
    for (uint64_t i = 0; i < first; ++i) spoiled.data()[i] ^= 0x5A;
    EXPECT_EQ(ByLanes(in, spoiled.data()), Reference(in.data(), len)) << "len " << len;
  }
}

TEST(Xxh3Parts, AnyChangedByteChangesTheHash) {
  for (uint64_t len : {uint64_t{1}, uint64_t{200}, 2 * kBlockBytes + 300}) {
    Bytes in = Bytes::Random(len, 3);
    const uint64_t original = Hash(in.data(), len);
    for (uint64_t i = 0; i < len; ++i) {
      in.data()[i] ^= 1;
      const uint64_t changed = Hash(in.data(), len);
      ASSERT_NE(changed, original) << "byte " << i << " of " << len;
      ASSERT_EQ(changed, Reference(in.data(), len)) << "byte " << i << " of " << len;
      in.data()[i] ^= 1;
    }
  }
}

// The project's checksum streams tensor after tensor; one pass over the concatenation must match.
TEST(Xxh3Parts, MatchesTheChecksumOfTensorsInOrder) {
  Bytes in = Bytes::Random(3 * kBlockBytes + 321, 4);
  const auto* bytes = reinterpret_cast<const std::byte*>(in.data());
  const std::vector<TensorBytes> views = {TensorBytes(bytes, 5), TensorBytes(bytes + 5, 0),
                                          TensorBytes(bytes + 5, 2000),
                                          TensorBytes(bytes + 2005, in.size() - 2005)};
  EXPECT_EQ(Hash(in.data(), in.size()), ChecksumTensors(views));
}

}  // namespace
}  // namespace loadbench::xxh3
