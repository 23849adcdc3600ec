// XXH3-64 (seed 0, default secret) taken apart so that a GPU can check the bytes it holds against
// the checksum the file stores (loaders/format/checksum.cc: XXH3_64bits over every tensor's bytes
// in table order) without copying them back. Above 240 bytes XXH3 adds to each of its 8 accumulator
// lanes, per 1024-byte block, an amount that does not depend on the accumulators, then scrambles
// every lane on its own: many threads can sum blocks (BlockLane) while 8 chain the scrambles
// (ScrambleLane), and one thread finishes (FinishLong). Compiles as C++20 and as CUDA device code;
// ported from xxhash.h 0.8 (XXH3_hashLong_64b, XXH3_len_*_64b), Hash() equals XXH3_64bits().
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define LB_HD __host__ __device__
#else
#define LB_HD
#endif

// A loop over lanes that nvcc leaves rolled puts the accumulators in local memory.
#ifdef __CUDA_ARCH__
#define LB_XXH3_UNROLL _Pragma("unroll")
#else
#define LB_XXH3_UNROLL
#endif

namespace loadbench::xxh3 {

// Words are read in the host's order: both sides are little-endian, as XXH3 is defined.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);

inline constexpr uint64_t kStripeBytes = 64, kBlockBytes = 1024, kShortMax = 240;

namespace internal {

inline constexpr uint64_t kPrime32_1 = 0x9E3779B1u, kPrime32_2 = 0x85EBCA77u,
                          kPrime32_3 = 0xC2B2AE3Du;
inline constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull, kPrime64_2 = 0xC2B2AE3D27D4EB4Full,
                          kPrime64_3 = 0x165667B19E3779F9ull, kPrime64_4 = 0x85EBCA77C2B2AE63ull,
                          kPrime64_5 = 0x27D4EB2F165667C5ull;

// Bytes 8k..8k+7 of the 192-byte default secret, little-endian. A function-local table because
// device code cannot read a namespace-scope constexpr array; a constant k folds to an immediate.
LB_HD inline uint64_t SecretWord(int k) {
  static constexpr uint64_t kWords[24] = {
      0xBE4BA423396CFEB8ull, 0x1CAD21F72C81017Cull, 0xDB979083E96DD4DEull, 0x1F67B3B7A4A44072ull,
      0x78E5C0CC4EE679CBull, 0x2172FFCC7DD05A82ull, 0x8E2443F7744608B8ull, 0x4C263A81E69035E0ull,
      0xCB00C391BB52283Cull, 0xA32E531B8B65D088ull, 0x4EF90DA297486471ull, 0xD8ACDEA946EF1938ull,
      0x3F349CE33F76FAA8ull, 0x1D4F0BC7C7BBDCF9ull, 0x3159B4CD4BE0518Aull, 0x647378D9C97E9FC8ull,
      0xC3EBD33483ACC5EAull, 0xEB6313FAFFA081C5ull, 0x49DAF0B751DD0D17ull, 0x9E68D429265516D3ull,
      0xFCA1477D58BE162Bull, 0xCE31D07AD1B8F88Full, 0x280416958F3ACB45ull, 0x7E404BBBCAFBD7AFull};
  return kWords[k];
}

// The 8 secret bytes at any offset up to 184 (the short paths and the tail read at odd ones).
LB_HD inline uint64_t SecretAt(int offset) {
  const int shift = 8 * (offset & 7);
  const uint64_t low = SecretWord(offset >> 3);
  return shift == 0 ? low : low >> shift | SecretWord((offset >> 3) + 1) << (64 - shift);
}

LB_HD inline uint64_t Read64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

LB_HD inline uint64_t Read32(const uint8_t* p) {
  return uint64_t{p[0]} | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24;
}

LB_HD inline uint64_t Swap64(uint64_t v) {
  v = (v & 0x00FF00FF00FF00FFull) << 8 | (v >> 8 & 0x00FF00FF00FF00FFull);
  v = (v & 0x0000FFFF0000FFFFull) << 16 | (v >> 16 & 0x0000FFFF0000FFFFull);
  return v << 32 | v >> 32;
}

// The 128-bit product of a and b, its halves xored.
LB_HD inline uint64_t MulFold(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return a * b ^ __umul64hi(a, b);
#else
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
#endif
}

LB_HD inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= 0x165667919E3779F9ull;
  return h ^ h >> 32;
}

LB_HD inline uint64_t Xxh64Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  return h ^ h >> 32;
}

LB_HD inline uint64_t Rrmxmx(uint64_t h, uint64_t len) {
  h ^= (h << 49 | h >> 15) ^ (h << 24 | h >> 40);
  h *= 0x9FB21C651E98DF25ull;
  h ^= (h >> 35) + len;
  h *= 0x9FB21C651E98DF25ull;
  return h ^ h >> 28;
}

LB_HD inline uint64_t Mix16(const uint8_t* p, int secret_offset) {
  return MulFold(Read64(p) ^ SecretAt(secret_offset), Read64(p + 8) ^ SecretAt(secret_offset + 8));
}

// One 64-byte stripe into all lanes; p need not be aligned.
LB_HD inline void AccumulateStripe(uint64_t acc[8], const uint8_t* p, int secret_offset) {
  for (int i = 0; i < 8; ++i) {
    const uint64_t value = Read64(p + 8 * i);
    const uint64_t key = value ^ SecretAt(secret_offset + 8 * i);
    acc[i ^ 1] += value;
    acc[i] += (key & 0xFFFFFFFFu) * (key >> 32);
  }
}

}  // namespace internal

LB_HD inline uint64_t InitLane(int lane) {
  using namespace internal;
  static constexpr uint64_t kInit[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                                        kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  return kInit[lane];
}

// Lane `lane`'s share of one whole block (16 stripes, 128 aligned little-endian words), before the
// scramble. Stripe s meets secret word s + lane, so with a constant lane (a caller that unrolls
// over lanes) every key is an immediate; with a lane from the thread index the 16 keys are table
// loads that do not depend on the block.
LB_HD inline uint64_t BlockLane(const uint64_t* block, int lane) {
  uint64_t sum = 0;
  LB_XXH3_UNROLL
  for (int s = 0; s < 16; ++s) {
    const uint64_t key = block[8 * s + lane] ^ internal::SecretWord(s + lane);
    sum += block[8 * s + (lane ^ 1)] + (key & 0xFFFFFFFFu) * (key >> 32);
  }
  return sum;
}

LB_HD inline uint64_t ScrambleLane(uint64_t acc, int lane) {
  acc ^= acc >> 47;
  acc ^= internal::SecretWord(16 + lane);
  return acc * internal::kPrime32_1;
}

// Whole blocks each followed by a scramble. The block that holds the last byte never is, even when
// it is whole: FinishLong takes it.
LB_HD constexpr uint64_t ChainedBlocks(uint64_t len) {
  return len > kShortMax ? (len - 1) / kBlockBytes : 0;
}

// The hash of data[0, len), len > 240, from the lanes after the chained blocks (per lane: InitLane,
// then for each chained block acc = ScrambleLane(acc + BlockLane(block, lane), lane)). Reads only
// data[min(ChainedBlocks(len) * 1024, len - 64), len): the last stripe may reach back into the last
// chained block. No alignment needed.
LB_HD inline uint64_t FinishLong(const uint64_t acc_in[8], const uint8_t* data, uint64_t len) {
  using namespace internal;
  uint64_t acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = acc_in[i];
  const uint64_t done = ChainedBlocks(len) * kBlockBytes;
  const int stripes = static_cast<int>((len - 1 - done) / kStripeBytes);
  for (int s = 0; s < stripes; ++s) AccumulateStripe(acc, data + done + s * kStripeBytes, 8 * s);
  AccumulateStripe(acc, data + len - kStripeBytes, 192 - 64 - 7);
  uint64_t h = len * kPrime64_1;
  for (int i = 0; i < 4; ++i) {
    h += MulFold(acc[2 * i] ^ SecretAt(11 + 16 * i), acc[2 * i + 1] ^ SecretAt(19 + 16 * i));
  }
  return Avalanche(h);
}

// len <= 240; no alignment needed.
LB_HD inline uint64_t HashShort(const uint8_t* p, uint64_t len) {
  using namespace internal;
  if (len > 128) {
    uint64_t h = len * kPrime64_1;
    for (int i = 0; i < 8; ++i) h += Mix16(p + 16 * i, 16 * i);
    h = Avalanche(h);
    const int rounds = static_cast<int>(len / 16);
    for (int i = 8; i < rounds; ++i) h += Mix16(p + 16 * i, 16 * (i - 8) + 3);
    return Avalanche(h + Mix16(p + len - 16, 136 - 17));
  }
  if (len > 16) {
    uint64_t h = len * kPrime64_1;
    // Pairs from both ends, as many as the length reaches: (0, len-16), (16, len-32), ...
    const int pairs = static_cast<int>((len - 1) / 32);
    for (int i = 0; i <= pairs; ++i) {
      h += Mix16(p + 16 * i, 32 * i) + Mix16(p + len - 16 * (i + 1), 32 * i + 16);
    }
    return Avalanche(h);
  }
  if (len > 8) {
    const uint64_t low = Read64(p) ^ SecretAt(24) ^ SecretAt(32);
    const uint64_t high = Read64(p + len - 8) ^ SecretAt(40) ^ SecretAt(48);
    return Avalanche(len + Swap64(low) + high + MulFold(low, high));
  }
  if (len >= 4) {
    const uint64_t bitflip = SecretAt(8) ^ SecretAt(16);
    return Rrmxmx((Read32(p + len - 4) + (Read32(p) << 32)) ^ bitflip, len);
  }
  if (len > 0) {
    const uint64_t combined =
        uint64_t{p[0]} << 16 | uint64_t{p[len >> 1]} << 24 | p[len - 1] | len << 8;
    return Xxh64Avalanche(combined ^ ((SecretAt(0) ^ SecretAt(4)) & 0xFFFFFFFFu));
  }
  return Xxh64Avalanche(SecretAt(56) ^ SecretAt(64));
}

// The whole hash in one thread: the reference the parts are tested against. data must be 8-byte
// aligned when len > 240 (the blocks are read as words).
LB_HD inline uint64_t Hash(const uint8_t* data, uint64_t len) {
  if (len <= kShortMax) return HashShort(data, len);
  const uint64_t* words = reinterpret_cast<const uint64_t*>(data);
  uint64_t acc[8];
  for (int lane = 0; lane < 8; ++lane) acc[lane] = InitLane(lane);
  for (uint64_t b = 0; b < ChainedBlocks(len); ++b) {
    LB_XXH3_UNROLL
    for (int lane = 0; lane < 8; ++lane) {
      acc[lane] = ScrambleLane(acc[lane] + BlockLane(words + b * (kBlockBytes / 8), lane), lane);
    }
  }
  return FinishLong(acc, data, len);
}

}  // namespace loadbench::xxh3
