// Consumers and transforms on tensors built in memory: forward computes with the numbers the
// bytes hold (so equal numbers in other encodings give equal results), order does not change
// a per-tensor consumer's result, and transforms convert exactly and hash their source.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include <xxhash.h>

#include "loaders/format/checksum.h"
#include "loaders/use/consume.h"
#include "loaders/use/transform.h"

namespace loadbench {
namespace {

// Bytes of `n` bf16 values of both signs and a spread of magnitudes, at a 64-byte boundary
// plus `shift`.
struct Buffer {
  std::vector<std::byte> storage;
  TensorBytes bytes;
  Buffer(size_t size, size_t shift, uint64_t seed) : storage(size + 128) {
    auto base = reinterpret_cast<uintptr_t>(storage.data());
    std::byte* p = storage.data() + ((64 - base % 64) % 64) + shift;
    std::mt19937_64 rng(seed);
    for (size_t k = 0; k + 2 <= size; k += 2) {
      const uint16_t exp = 0x3c00 + static_cast<uint16_t>(rng() % 0x0600);  // ~2^-7 .. 2^5
      const uint16_t v = static_cast<uint16_t>((rng() & 0x8000) | exp | (rng() & 0x7f));
      std::memcpy(p + k, &v, 2);
    }
    bytes = TensorBytes(p, size);
  }
};

uint64_t Forward(const TensorInfo& t, TensorBytes b, bool copy_unaligned = false,
                 ConsumeStats* stats = nullptr) {
  auto c = MakeConsumer("forward", 1, copy_unaligned);
  c->Use(0, t, b);
  if (stats) *stats = c->stats();
  return c->Result();
}

TEST(Consume, ForwardOnBF16EqualsForwardOnTheSameNumbersWidenedToF32) {
  const TensorInfo t{"blk.0.w", "bf16", {13, 100}, 0, 2600};  // rows of 100: 8-lane tail of 4
  Buffer b(t.size, 0, 1);
  std::vector<std::byte> wide(t.size * 2);
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  TransformTensor("bf16_to_f32", t, b.bytes.data(), wide.data(), h);
  const TensorInfo tw = Transformed("bf16_to_f32", t);
  EXPECT_EQ(tw.dtype, "f32");
  EXPECT_EQ(tw.size, t.size * 2);
  EXPECT_EQ(Forward(t, b.bytes), Forward(tw, TensorBytes(wide.data(), wide.size())));
  // The transform hashed its source: the bytes the strategy delivered.
  EXPECT_EQ(XXH3_64bits_digest(h), XXH3_64bits(b.bytes.data(), b.bytes.size()));
  XXH3_freeState(h);
}

TEST(Consume, ForwardDependsOnTheNumbers) {
  const TensorInfo t{"w", "bf16", {4, 64}, 0, 512};
  Buffer a(t.size, 0, 1), b(t.size, 0, 2);
  EXPECT_NE(Forward(t, a.bytes), Forward(t, b.bytes));
  std::vector<std::byte> copy(a.bytes.begin(), a.bytes.end());
  copy[100] ^= std::byte{0x40};  // one exponent bit of one element
  EXPECT_NE(Forward(t, a.bytes), Forward(t, TensorBytes(copy.data(), copy.size())));
}

TEST(Consume, UnalignedTensorsGiveTheSameResultReadOrCopied) {
  const TensorInfo t{"w", "bf16", {7, 96}, 0, 1344};
  Buffer aligned(t.size, 0, 3), shifted(t.size, 2, 3);
  ConsumeStats s_aligned, s_read, s_copy;
  const uint64_t r = Forward(t, aligned.bytes, false, &s_aligned);
  EXPECT_EQ(Forward(t, shifted.bytes, false, &s_read), r);
  EXPECT_EQ(Forward(t, shifted.bytes, true, &s_copy), r);
  EXPECT_EQ(s_aligned.unaligned_tensors, 0u);
  EXPECT_EQ(s_read.unaligned_tensors, 1u);
  EXPECT_EQ(s_read.aligned_copies, 0u);
  EXPECT_EQ(s_copy.aligned_copies, t.size);
}

TEST(Consume, F16AndUntypedTensors) {
  // f16 1.0 = 0x3c00, 2.0 = 0x4000: rows of 9 ones against the fixed vector, then twos.
  std::vector<uint16_t> ones(18, 0x3c00), twos(18, 0x4000);
  const TensorInfo t{"w", "f16", {2, 9}, 0, 36};
  const uint64_t r1 = Forward(t, TensorBytes(reinterpret_cast<std::byte*>(ones.data()), 36));
  const uint64_t r2 = Forward(t, TensorBytes(reinterpret_cast<std::byte*>(twos.data()), 36));
  EXPECT_NE(r1, r2);
  ConsumeStats s;
  Forward(TensorInfo{"q", "q8_0", {34}, 0, 34},
          TensorBytes(reinterpret_cast<std::byte*>(ones.data()), 34), false, &s);
  EXPECT_EQ(s.untyped_tensors, 1u);
}

TEST(Consume, PerTensorConsumersDoNotDependOnOrder) {
  TensorTable table;
  std::vector<Buffer> bufs;
  for (int i = 0; i < 5; ++i) {
    table.tensors.push_back(TensorInfo{"blk." + std::to_string(i) + ".w", "bf16", {4, 32}, 0, 256});
    bufs.emplace_back(256, 0, 10 + i);
  }
  for (const char* name : {"forward", "random"}) {
    std::vector<uint64_t> results;
    for (int64_t seed : {1, 2, 3}) {
      std::vector<size_t> all(5);
      std::iota(all.begin(), all.end(), 0);
      const auto order = UseOrder(name, table, all, true, seed);
      ASSERT_EQ(order.size(), 5u);
      auto c = MakeConsumer(name, 5, false);
      for (size_t i : order) c->Use(i, table.tensors[i], bufs[i].bytes);
      results.push_back(c->Result());
    }
    EXPECT_EQ(results[0], results[1]) << name;
    EXPECT_EQ(results[0], results[2]) << name;
  }
  std::vector<size_t> all = {0, 1, 2, 3, 4};
  EXPECT_NE(UseOrder("random", table, all, true, 1), UseOrder("random", table, all, true, 2));
  EXPECT_EQ(UseOrder("checksum", table, all, true, 1), all);
}

TEST(Consume, ChecksumConsumerGivesTheFileChecksumInTableOrder) {
  Buffer a(300, 0, 1), b(1000, 3, 2);
  const std::vector<TensorBytes> views = {a.bytes, b.bytes};
  auto c = MakeConsumer("checksum", 2, false);
  c->Use(0, TensorInfo{}, a.bytes);
  c->Use(1, TensorInfo{}, b.bytes);
  EXPECT_EQ(c->Result(), ChecksumTensors(views));
  EXPECT_EQ(c->stats().unaligned_tensors, 1u);
}

TEST(Transform, ByteswapConvertsEveryElementAndTwiceIsTheIdentity) {
  for (const char* dtype : {"bf16", "f32", "f64", "i8"}) {
    const TensorInfo t{"w", dtype, {1, 200000}, 0, 200000 / 8 * 8};
    Buffer b(t.size, 0, 5);
    std::vector<std::byte> once(t.size), twice(t.size);
    XXH3_state_t* h = XXH3_createState();
    XXH3_64bits_reset(h);
    TransformTensor("byteswap", t, b.bytes.data(), once.data(), h);
    TransformTensor("byteswap", t, once.data(), twice.data(), h);
    XXH3_freeState(h);
    EXPECT_EQ(std::memcmp(twice.data(), b.bytes.data(), t.size), 0) << dtype;
    const size_t es = std::string(dtype) == "bf16"  ? 2
                      : std::string(dtype) == "f32" ? 4
                      : std::string(dtype) == "f64" ? 8
                                                    : 1;
    for (size_t k = 0; k < t.size; k += 4099 * es) {  // crosses the 64 KiB chunks
      for (size_t j = 0; j < es; ++j) {
        ASSERT_EQ(once[k + j], b.bytes[k + es - 1 - j]) << dtype << " byte " << k + j;
      }
    }
  }
}

TEST(Transform, InPlaceEqualsSeparate) {
  const TensorInfo t{"w", "f32", {3, 1000}, 0, 12000};
  Buffer b(t.size, 0, 6);
  std::vector<std::byte> separate(t.size);
  std::vector<std::byte> inplace(b.bytes.begin(), b.bytes.end());
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  TransformTensor("byteswap", t, b.bytes.data(), separate.data(), h);
  TransformTensor("byteswap", t, inplace.data(), inplace.data(), h);
  XXH3_freeState(h);
  EXPECT_EQ(separate, inplace);
}

TEST(Transform, ChecksRefuseWhatCannotBeConverted) {
  TensorTable little;
  little.tensors.push_back(TensorInfo{"w", "bf16", {2}, 0, 4});
  Status s = CheckTransform("byteswap", little, "/m.wlf");
  EXPECT_EQ(s.code(), Status::Code::kUnsupported);
  EXPECT_NE(s.message().find("/m.wlf"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckTransform("bf16_to_f32", little, "/m.wlf").ok());
  TensorTable big = little;
  big.big_endian = true;
  EXPECT_TRUE(CheckTransform("byteswap", big, "/m.wlf").ok());
  EXPECT_EQ(CheckTransform("bf16_to_f32", big, "/m.wlf").code(), Status::Code::kUnsupported);
  big.tensors.push_back(TensorInfo{"q", "q4_0", {32}, 4, 18});
  EXPECT_EQ(CheckTransform("byteswap", big, "/m.wlf").code(), Status::Code::kUnsupported);
}

}  // namespace
}  // namespace loadbench
