// Test support: safetensors and GGUF files built byte by byte, so that tests can write exactly
// the hostile file they mean (a lying count, a truncated string, a wrong type) rather than
// corrupt a valid one. For tests only; linked into loadbench_tests.
//
// Typical use:
//   test::TempDir dir;
//   const std::string st = dir.File("a.safetensors");
//   test::WriteFileBytes(st, test::SafetensorsBytes(
//       "{" + test::StEntry("w", "F32", "[2]", 0, 8) + "}", test::Filler(8)));
//   test::GgufBuilder g(3);
//   g.U32("general.alignment", 64).Tensor("w", {4, 2}, test::kGgmlF32, 0);
//   test::WriteFileBytes(dir.File("a.gguf"), g.Build(64, test::Filler(32)));
//   EXPECT_TRUE(test::Refused(path, "tensor 'w'"));
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace loadbench::test {

static_assert(std::endian::native == std::endian::little,
              "the builders write the host's integers as the formats' little-endian ones");

// `n` bytes of a non-zero pattern that differs from byte to byte.
std::vector<std::byte> Filler(uint64_t n);
// Little-endian encodings, and the concatenation of pieces, for hand-built fields.
std::vector<std::byte> U32Bytes(uint32_t v);
std::vector<std::byte> U64Bytes(uint64_t v);
std::vector<std::byte> TextBytes(std::string_view s);
std::vector<std::byte> Cat(std::initializer_list<std::vector<std::byte>> pieces);

// Reads `path` with ReadTensorTableFromPath and succeeds when it is refused as kBadInput with a
// one-line message that starts with the path and contains `reason`; the failure names what
// differed and quotes the message.
::testing::AssertionResult Refused(const std::string& path, std::string_view reason);

// ---- safetensors ----

// A safetensors file: the 8-byte length of `json`, `json` as is (no padding), then `data`.
std::vector<std::byte> SafetensorsBytes(std::string_view json,
                                        std::span<const std::byte> data = {});
// One tensor entry, `"name":{"dtype":..,"shape":..,"data_offsets":[begin,end]}`, to splice into
// a header; `shape` is JSON text ("[2, 3]").
std::string StEntry(std::string_view name, std::string_view dtype, std::string_view shape,
                    uint64_t begin, uint64_t end);

// ---- GGUF ----

// Metadata value types (gguf_type).
enum GgufValueType : uint32_t {
  kGgufU8 = 0,
  kGgufI8 = 1,
  kGgufU16 = 2,
  kGgufI16 = 3,
  kGgufU32 = 4,
  kGgufI32 = 5,
  kGgufF32 = 6,
  kGgufBool = 7,
  kGgufString = 8,
  kGgufArray = 9,
  kGgufU64 = 10,
  kGgufI64 = 11,
  kGgufF64 = 12,
};
// Bytes of a fixed-size value type; 0 for string and array.
uint64_t GgufScalarSize(uint32_t type);

// The ggml tensor types the tests use (ggml_type codes).
enum GgmlTypeCode : uint32_t {
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlQ4_0 = 2,
  kGgmlQ8_0 = 8,
  kGgmlQ4_K = 12,
  kGgmlI8 = 24,
  kGgmlF64 = 28,
  kGgmlBF16 = 30,
};

// A GGUF file put together piece by piece. Lengths and counts are written 32 bits wide in
// version 1 and 64 after (as the reader expects); everything else follows the format. The
// header's counts are the numbers of key-values and tensor infos added unless overridden.
class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

  GgufBuilder& SetMagic(uint32_t magic) {
    magic_ = magic;
    return *this;
  }
  GgufBuilder& SetTensorCount(uint64_t n) {
    tensor_count_ = n;
    count_tensors_ = false;
    return *this;
  }
  GgufBuilder& SetKvCount(uint64_t n) {
    kv_count_ = n;
    count_kvs_ = false;
    return *this;
  }

  // Key-values. Scalar writes the low GgufScalarSize(type) bytes of `bits` (for floats, pass
  // std::bit_cast of the value).
  GgufBuilder& Scalar(std::string_view key, uint32_t type, uint64_t bits);
  GgufBuilder& U32(std::string_view key, uint32_t v) { return Scalar(key, kGgufU32, v); }
  GgufBuilder& String(std::string_view key, std::string_view value);
  // An array whose count field says `count` and whose elements are `elems`, verbatim.
  GgufBuilder& Array(std::string_view key, uint32_t elem_type, uint64_t count,
                     std::span<const std::byte> elems = {});
  GgufBuilder& StringArray(std::string_view key, const std::vector<std::string>& values);
  // Appended verbatim as the next key-value; counts as one.
  GgufBuilder& RawKv(std::span<const std::byte> bytes);

  // A tensor info; `dims` innermost first, as GGUF stores them.
  GgufBuilder& Tensor(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type,
                      uint64_t offset);
  // Appended verbatim as the next tensor info; counts as one.
  GgufBuilder& RawTensor(std::span<const std::byte> bytes);

  // A length or count, and a string, as this builder's version writes them.
  std::vector<std::byte> Count(uint64_t n) const;
  std::vector<std::byte> Str(std::string_view s) const;

  // Bytes of the header, key-values and infos: where the padding before the data section starts.
  uint64_t HeadSize() const;
  // Bytes of the header alone (magic, version, the two counts).
  uint64_t HeaderSize() const { return 8 + 2 * Count(0).size(); }
  // The whole file: head, zero padding to the next multiple of `alignment` (1: none), `data`.
  std::vector<std::byte> Build(uint64_t alignment = 32, std::span<const std::byte> data = {}) const;

 private:
  uint32_t version_;
  uint32_t magic_ = 0x46554747;  // "GGUF"
  bool count_tensors_ = true, count_kvs_ = true;
  uint64_t tensor_count_ = 0, kv_count_ = 0;
  std::vector<std::byte> kvs_, infos_;
};

}  // namespace loadbench::test
