// GGUF reading: files the reader must accept (with the table it must give back), a round trip
// through EncodeGgufHead, then hostile files built byte by byte, each of which must be refused
// as bad input with a message that names the path, the place and the number, and must fail
// before anything is allocated for a claimed count.
#include "loaders/format/gguf.h"

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "loaders/base/file_io.h"
#include "loaders/format/format.h"
#include "tests/support/format_builders.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using test::Cat;
using test::GgufBuilder;
using test::U32Bytes;

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class GgufTest : public ::testing::Test {
 protected:
  void Write(const std::vector<std::byte>& bytes) { test::WriteFileBytes(path_, bytes); }
  Status Read(TensorTable* t) { return ReadTensorTableFromPath(path_, t); }

  test::TempDir dir_;
  const std::string path_ = dir_.File("model.gguf");
};

// ---- Files the reader accepts ----

// The same content in every version: 32-bit lengths, counts and dims in version 1, 64 after.
TEST_F(GgufTest, VersionsOneTwoThreeGiveTheSameTable) {
  std::vector<TensorTable> tables;
  for (uint32_t version : {1u, 2u, 3u}) {
    SCOPED_TRACE(testing::Message() << "version " << version);
    GgufBuilder g(version);
    g.String("general.architecture", "llama")
        .U32("general.alignment", 64)
        .StringArray("tokenizer.ggml.tokens", {"a", "bc", ""})
        .Tensor("tok_embd", {3, 4}, test::kGgmlF32, 0)
        .Tensor("norm", {8}, test::kGgmlF16, 64)
        .Tensor("scalar", {}, test::kGgmlI8, 128);
    Write(g.Build(64, test::Filler(129)));
    TensorTable t;
    const Status s = Read(&t);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(t.format, "gguf");
    EXPECT_EQ(t.header["version"], version);
    EXPECT_EQ(t.header["alignment"], 64u);
    EXPECT_EQ(t.header["metadata"]["general.architecture"], "llama");
    EXPECT_EQ(t.header["metadata"]["tokenizer.ggml.tokens"],
              (nlohmann::ordered_json{{"array_of", "string"}, {"count", 3}}));
    EXPECT_EQ(t.data_offset, RoundUp(g.HeadSize(), 64));
    tables.push_back(std::move(t));
  }
  for (const TensorTable& t : tables) {
    ASSERT_EQ(t.tensors.size(), 3u);
    const std::vector<std::string> names = {"tok_embd", "norm", "scalar"};
    const std::vector<std::string> dtypes = {"f32", "f16", "i8"};
    const std::vector<std::vector<uint64_t>> shapes = {{4, 3}, {8}, {}};
    const std::vector<uint64_t> rel = {0, 64, 128}, sizes = {48, 16, 1};
    for (size_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(names[i]);
      EXPECT_EQ(t.tensors[i].name, names[i]);
      EXPECT_EQ(t.tensors[i].dtype, dtypes[i]);
      EXPECT_EQ(t.tensors[i].shape, shapes[i]);
      EXPECT_EQ(t.tensors[i].offset, t.data_offset + rel[i]);
      EXPECT_EQ(t.tensors[i].size, sizes[i]);
    }
    EXPECT_EQ(t.tensor_bytes, 65u);
  }
}

// A key-value of every type, arrays of every element type among them, then a tensor: the
// tensor is read right only if every value was skipped by exactly its size.
TEST_F(GgufTest, EveryValueTypeIsSkippedExactly) {
  for (uint32_t version : {1u, 3u}) {
    SCOPED_TRACE(testing::Message() << "version " << version);
    GgufBuilder g(version);
    g.Scalar("u8", test::kGgufU8, 200)
        .Scalar("i8", test::kGgufI8, static_cast<uint8_t>(-5))
        .Scalar("u16", test::kGgufU16, 65535)
        .Scalar("i16", test::kGgufI16, static_cast<uint16_t>(-300))
        .Scalar("u32", test::kGgufU32, 4000000000u)
        .Scalar("i32", test::kGgufI32, static_cast<uint32_t>(-70000))
        .Scalar("f32", test::kGgufF32, std::bit_cast<uint32_t>(1.5f))
        .Scalar("bool", test::kGgufBool, 1)
        .String("string", "héllo")
        .Scalar("u64", test::kGgufU64, 1ull << 40)
        .Scalar("i64", test::kGgufI64, static_cast<uint64_t>(-(1ll << 40)))
        .Scalar("f64", test::kGgufF64, std::bit_cast<uint64_t>(-2.25))
        .StringArray("strings", {"x", "", "yz"})
        .StringArray("no strings", {});
    for (uint32_t type = 0; type <= test::kGgufF64; ++type) {
      if (type == test::kGgufString || type == test::kGgufArray) continue;
      const uint64_t size = test::GgufScalarSize(type);
      g.Array(fmt::format("array.{}", type), type, 3, test::Filler(3 * size));
      g.Array(fmt::format("empty.{}", type), type, 0);
    }
    g.Tensor("after", {5, 2}, test::kGgmlF32, 0);
    Write(g.Build(32, test::Filler(40)));
    TensorTable t;
    const Status s = Read(&t);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(t.tensors.size(), 1u);
    EXPECT_EQ(t.tensors[0].name, "after");
    EXPECT_EQ(t.tensors[0].shape, (std::vector<uint64_t>{2, 5}));
    EXPECT_EQ(t.tensors[0].size, 40u);
    EXPECT_EQ(t.tensors[0].offset, RoundUp(g.HeadSize(), 32));
    auto& m = t.header["metadata"];
    EXPECT_EQ(m["u8"], 200);
    EXPECT_EQ(m["i8"], -5);
    EXPECT_EQ(m["u16"], 65535);
    EXPECT_EQ(m["i16"], -300);
    EXPECT_EQ(m["u32"], 4000000000u);
    EXPECT_EQ(m["i32"], -70000);
    EXPECT_EQ(m["f32"], 1.5);
    EXPECT_EQ(m["bool"], true);
    EXPECT_EQ(m["string"], "héllo");
    EXPECT_EQ(m["u64"], 1ull << 40);
    EXPECT_EQ(m["i64"], -(1ll << 40));
    EXPECT_EQ(m["f64"], -2.25);
    EXPECT_EQ(m["strings"], (nlohmann::ordered_json{{"array_of", "string"}, {"count", 3}}));
    EXPECT_EQ(m["array.10"], (nlohmann::ordered_json{{"array_of", "u64"}, {"count", 3}}));
    EXPECT_EQ(m["empty.7"], (nlohmann::ordered_json{{"array_of", "bool"}, {"count", 0}}));
    EXPECT_EQ(t.header["kv_count"], 14u + 2 * 11);
  }
}

TEST_F(GgufTest, DuplicateKeysFirstOccurrenceWins) {
  GgufBuilder g;
  g.U32("general.alignment", 64)
      .String("general.name", "first")
      .U32("general.alignment", 32)
      .String("general.name", "second")
      .String("general.alignment", "not even a number")
      .Tensor("w", {8}, test::kGgmlF32, 64);
  Write(g.Build(64, test::Filler(96)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.header["alignment"], 64u);
  EXPECT_EQ(t.data_offset, RoundUp(g.HeadSize(), 64));
  EXPECT_EQ(t.data_offset % 64, 0u);
  EXPECT_EQ(t.header["metadata"]["general.alignment"], 64u);
  EXPECT_EQ(t.header["metadata"]["general.name"], "first");
  EXPECT_EQ(t.header["duplicate_keys"],
            (nlohmann::ordered_json{"general.alignment", "general.name", "general.alignment"}));
  ASSERT_EQ(t.tensors.size(), 1u);
  EXPECT_EQ(t.tensors[0].offset, t.data_offset + 64);
}

TEST_F(GgufTest, DefaultAlignmentIs32) {
  GgufBuilder g;
  g.String("general.name", "x")
      .Tensor("a", {3}, test::kGgmlF32, 0)
      .Tensor("b", {1}, test::kGgmlF32, 32);
  Write(g.Build(32, test::Filler(36)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.header["alignment"], 32u);
  EXPECT_EQ(t.data_offset, RoundUp(g.HeadSize(), 32));
  EXPECT_FALSE(t.header["metadata"].contains("general.alignment"));
}

// The data section starts at the first multiple of the alignment at or after the infos' end:
// no padding when they end on one.
TEST_F(GgufTest, DataSectionStartsAtTheInfosEndRoundedUp) {
  for (uint64_t pad = 0; pad < 64; pad += 9) {
    SCOPED_TRACE(testing::Message() << "pad " << pad);
    GgufBuilder g;
    g.U32("general.alignment", 64)
        .String("pad", std::string(pad, 'p'))
        .Tensor("w", {2}, test::kGgmlF32, 0);
    Write(g.Build(64, test::Filler(8)));
    TensorTable t;
    const Status s = Read(&t);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(t.data_offset, RoundUp(g.HeadSize(), 64));
    EXPECT_EQ(t.header["data_offset"], t.data_offset);
    EXPECT_EQ(t.tensors[0].offset, t.data_offset);
  }
  // Ending exactly on the alignment: 24 + (8 + 55 + 4 + 4) + (8 + 1 + 4 + 8 + 4 + 8) = 128.
  GgufBuilder g;
  g.U32(std::string(5 + 50, 'k'), 0).Tensor("w", {2}, test::kGgmlF32, 0);
  ASSERT_EQ(g.HeadSize(), 128u);
  Write(g.Build(32, test::Filler(8)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.data_offset, 128u);
}

TEST_F(GgufTest, AlignmentOneAllowsAnyOffset) {
  GgufBuilder g;
  g.U32("general.alignment", 1)
      .Tensor("a", {3}, test::kGgmlI8, 0)
      .Tensor("b", {1}, test::kGgmlF32, 3);
  Write(g.Build(1, test::Filler(7)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.data_offset, g.HeadSize());
  EXPECT_EQ(t.tensors[1].offset, g.HeadSize() + 3);
}

TEST_F(GgufTest, ShapeIsReversed) {
  GgufBuilder g;
  g.Tensor("w", {3, 4}, test::kGgmlF32, 0).Tensor("v", {2, 3, 5, 7}, test::kGgmlBF16, 64);
  Write(g.Build(32, test::Filler(64 + 2 * 210)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.tensors[0].shape, (std::vector<uint64_t>{4, 3}));
  EXPECT_EQ(t.tensors[1].shape, (std::vector<uint64_t>{7, 5, 3, 2}));
  EXPECT_EQ(t.tensors[1].dtype, "bf16");
  EXPECT_EQ(t.tensors[1].size, 420u);
}

TEST_F(GgufTest, QuantizedSizes) {
  GgufBuilder g;
  g.Tensor("q8", {64, 2}, test::kGgmlQ8_0, 0)
      .Tensor("q4k", {256}, test::kGgmlQ4_K, 160)
      .Tensor("q4", {32, 1, 1, 3}, test::kGgmlQ4_0, 320);
  Write(g.Build(32, test::Filler(320 + 54)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 3u);
  EXPECT_EQ(t.tensors[0].dtype, "q8_0");
  EXPECT_EQ(t.tensors[0].size, 2u * 2 * 34);
  EXPECT_EQ(t.tensors[1].dtype, "q4_k");
  EXPECT_EQ(t.tensors[1].size, 144u);
  EXPECT_EQ(t.tensors[2].dtype, "q4_0");
  EXPECT_EQ(t.tensors[2].size, 3u * 18);
  EXPECT_EQ(t.tensor_bytes, 136u + 144 + 54);
  EXPECT_EQ(t.header["rows_across_blocks"], 0u);
}

// 2023 llama.cpp wrote q8_0 tensors with 172-element rows: 11008 elements are 344 whole blocks
// though no row is.
TEST_F(GgufTest, RowsAcrossBlocksAreReadAndCounted) {
  GgufBuilder g;
  g.Tensor("ffn", {172, 64}, test::kGgmlQ8_0, 0);
  Write(g.Build(32, test::Filler(11696)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 1u);
  EXPECT_EQ(t.tensors[0].size, 11696u);
  EXPECT_EQ(t.header["rows_across_blocks"], 1u);
}

TEST_F(GgufTest, PartialBlocksAreRefused) {
  GgufBuilder g;
  g.Tensor("w", {40}, test::kGgmlQ8_0, 0);
  Write(g.Build(32, test::Filler(64)));
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'w' (info at offset 24): 40 elements of q8_0 are not a whole number of "
             "32-element blocks"));
}

// Vocab-only files end right after their key-values: no tensor, no data section.
TEST_F(GgufTest, ZeroTensorsEndingAfterTheKeyValues) {
  GgufBuilder g;
  g.String("general.architecture", "llama").StringArray("tokenizer.ggml.tokens", {"<s>", "a"});
  Write(g.Build(1));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(t.tensors.empty());
  EXPECT_EQ(t.tensor_bytes, 0u);
  EXPECT_EQ(t.file_size, g.HeadSize());
  EXPECT_LE(t.data_offset, t.file_size);
  // No key-values either.
  Write(GgufBuilder().Build(1));
  ASSERT_TRUE(Read(&t).ok());
  EXPECT_EQ(t.file_size, 24u);
}

TEST_F(GgufTest, TouchingTensorsAndEmptyOnesDoNotOverlap) {
  GgufBuilder g;
  g.Tensor("b", {8}, test::kGgmlF32, 32)
      .Tensor("a", {8}, test::kGgmlF32, 0)
      .Tensor("empty.in", {0}, test::kGgmlF32, 0)
      .Tensor("empty.mid", {0, 3}, test::kGgmlQ8_0, 32)
      .Tensor("empty.end", {0}, test::kGgmlF32, 64);
  Write(g.Build(32, test::Filler(64)));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 5u);
  EXPECT_EQ(t.tensors[0].name, "b");  // file order is kept
  EXPECT_EQ(t.tensor_bytes, 64u);
}

TEST_F(GgufTest, ChecksumKey) {
  GgufBuilder g;
  g.String("loadbench.xxh3_64", "0123456789abcdef")
      .String("loadbench.gen_spec", "00000000000000ff");
  Write(g.Build(1));
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(t.expected_checksum.has_value());
  EXPECT_EQ(*t.expected_checksum, 0x0123456789abcdefull);
  EXPECT_EQ(t.header["gen_spec_id"], "00000000000000ff");

  Write(GgufBuilder().String("loadbench.xxh3_64", "0123456789ABCDEF").Build(1));
  EXPECT_TRUE(
      test::Refused(path_, "key 'loadbench.xxh3_64' is \"0123456789ABCDEF\", not a string of 16"));
  Write(GgufBuilder().Scalar("loadbench.xxh3_64", test::kGgufU64, 7).Build(1));
  EXPECT_TRUE(test::Refused(path_, "key 'loadbench.xxh3_64' is 7, not a string"));
}

// ---- Round trip through the writer ----

TEST(GgufRoundTripTest, EncodedHeadReadsBack) {
  const std::vector<WlfTensorSpec> specs = {
      {"token_embd.weight", WlfDType::kBF16, {3, 5}},
      {"norm", WlfDType::kF32, {7}},
      {"one", WlfDType::kI8, {1}},
      {"empty", WlfDType::kF32, {0, 4}},
      {"scalar", WlfDType::kF64, {}},
      {"cube", WlfDType::kI16, {3, 1, 3, 2}},
      {"odd", WlfDType::kI32, {1025}},
      {"half", WlfDType::kF16, {9}},
      {"wide", WlfDType::kI64, {2}},
  };
  const std::vector<std::string> dtypes = {"bf16", "f32", "i8",  "f32", "f64",
                                           "i16",  "i32", "f16", "i64"};
  test::TempDir dir;
  const std::string path = dir.File("rt.gguf");
  for (uint32_t align : {1u, 32u, 64u, 256u}) {
    SCOPED_TRACE(testing::Message() << "alignment " << align);
    FileLayout l;
    std::vector<std::byte> head;
    const Status e =
        EncodeGgufHead(specs,
                       {GgufString(kGgufChecksumKey, "00000000deadbeef"),
                        GgufStringArray("x", {"y", "z"}), GgufArray("i32s", 5, 2, test::Filler(8))},
                       align, &l, &head);
    ASSERT_TRUE(e.ok()) << e.message();
    ASSERT_EQ(head.size(), l.data_offset);
    std::vector<std::byte> file = head;
    const std::vector<std::byte> data = test::Filler(l.data_end - l.data_offset);
    file.insert(file.end(), data.begin(), data.end());
    test::WriteFileBytes(path, file);

    TensorTable t;
    const Status s = ReadTensorTableFromPath(path, &t);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(t.format, "gguf");
    EXPECT_EQ(t.header["version"], 3u);
    EXPECT_EQ(t.header["alignment"], align);
    EXPECT_EQ(t.data_offset, l.data_offset);
    EXPECT_EQ(t.data_offset % align, 0u);
    EXPECT_EQ(t.file_size, l.file_size);
    ASSERT_TRUE(t.expected_checksum.has_value());
    EXPECT_EQ(*t.expected_checksum, 0xdeadbeefu);
    EXPECT_EQ(t.header["metadata"]["x"],
              (nlohmann::ordered_json{{"array_of", "string"}, {"count", 2}}));
    EXPECT_EQ(t.header["metadata"]["i32s"],
              (nlohmann::ordered_json{{"array_of", "i32"}, {"count", 2}}));
    ASSERT_EQ(t.tensors.size(), specs.size());
    uint64_t total = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      SCOPED_TRACE(specs[i].name);
      EXPECT_EQ(t.tensors[i].name, specs[i].name);
      EXPECT_EQ(t.tensors[i].dtype, dtypes[i]);
      EXPECT_EQ(t.tensors[i].shape, specs[i].shape);
      EXPECT_EQ(t.tensors[i].offset, l.tensor_offsets[i]);
      EXPECT_EQ(t.tensors[i].offset % align, 0u);
      EXPECT_EQ(t.tensors[i].size, l.tensor_sizes[i]);
      total += l.tensor_sizes[i];
    }
    EXPECT_EQ(t.tensor_bytes, total);
  }
}

// ---- Header ----

TEST_F(GgufTest, WrongMagic) {
  Write(GgufBuilder().SetMagic(0x47475546).Build(1));  // "FUGG"
  EXPECT_TRUE(test::Refused(path_, "unknown format"));
  UniqueFd fd;
  ASSERT_TRUE(OpenReadOnly(path_, 0, &fd).ok());
  TensorTable t;
  const Status s = ReadGguf(FileSource(fd.get(), path_, 24), &t);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("invalid GGUF file: wrong magic 0x47475546"), std::string::npos)
      << s.message();
}

TEST_F(GgufTest, UnsupportedVersions) {
  Write(GgufBuilder(0).Build(1));
  EXPECT_TRUE(test::Refused(path_, "unsupported version 0 (this build reads versions 1 to 3)"));
  Write(GgufBuilder(4).Build(1));
  EXPECT_TRUE(test::Refused(path_, "unsupported version 4"));
  Write(GgufBuilder(0xFFFFFFFF).Build(1));
  EXPECT_TRUE(test::Refused(path_, "unsupported version 4294967295"));
}

// A big-endian file (s390x builds) stores version 3 as the bytes 00 00 00 03.
TEST_F(GgufTest, BigEndianFile) {
  Write(GgufBuilder(0x03000000).Build(1));
  EXPECT_TRUE(test::Refused(path_, "big-endian GGUF file (version field reads 0x03000000)"));
}

TEST_F(GgufTest, TruncatedHeader) {
  std::vector<std::byte> bytes = GgufBuilder().Build(1);
  bytes.resize(12);
  Write(bytes);
  EXPECT_TRUE(
      test::Refused(path_, "tensor count at offset 8 needs 8 bytes, but the file ends at 12"));
  bytes.resize(20);
  Write(bytes);
  EXPECT_TRUE(
      test::Refused(path_, "key-value count at offset 16 needs 8 bytes, but the file ends at 20"));
}

// ---- Counts and lengths that claim more than the file holds ----

TEST_F(GgufTest, KeyValueCountThatCannotFit) {
  Write(GgufBuilder().String("k", "v").SetKvCount(1ull << 60).Build(1));
  EXPECT_TRUE(test::Refused(
      path_, "key-value count 1152921504606846976 cannot fit in the 22 bytes after the header"));
  // Version 1: 32-bit counts.
  Write(GgufBuilder(1).String("k", "v").SetKvCount(0xFFFFFFFF).Build(1));
  EXPECT_TRUE(test::Refused(path_, "key-value count 4294967295 cannot fit in the 14 bytes"));
}

TEST_F(GgufTest, TensorCountThatCannotFit) {
  Write(GgufBuilder()
            .Tensor("w", {1}, test::kGgmlF32, 0)
            .SetTensorCount(1ull << 60)
            .Build(32, test::Filler(4)));
  EXPECT_TRUE(test::Refused(path_, "tensor count 1152921504606846976 cannot fit in the"));
}

// The count says more than the infos that are there: the reader runs out of file.
TEST_F(GgufTest, FewerInfosThanCounted) {
  GgufBuilder g;
  g.Tensor("w", {1}, test::kGgmlF32, 0).SetTensorCount(2);
  Write(g.Build(1, test::Filler(60)));  // what follows the first info reads as a huge length
  EXPECT_TRUE(test::Refused(
      path_,
      fmt::format("name of tensor 1 at offset {} has length 578437695752307201, past the end",
                  g.HeadSize())));
}

TEST_F(GgufTest, StringArrayOfATrillionInASmallFile) {
  GgufBuilder g;
  g.Array("tokenizer.ggml.tokens", test::kGgufString, 1ull << 40, g.Str("a"));
  Write(g.Build(1));
  // The count sits after the header, the key (8 + 21 bytes), the type and the element type.
  EXPECT_TRUE(test::Refused(
      path_, "key 'tokenizer.ggml.tokens' claims 1099511627776 string elements at offset 61, "
             "more than the 9 bytes left can hold"));
}

TEST_F(GgufTest, U64ArrayCountOf2To61) {
  GgufBuilder g;
  g.Array("k", test::kGgufU64, 1ull << 61, test::Filler(64));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(
      path_,
      "key 'k' claims 2305843009213693952 u64 elements at offset 41, more than the 64 bytes left"));
  // One element more than the bytes left hold, for a one-byte type.
  GgufBuilder h;
  h.Array("k", test::kGgufU8, 5, test::Filler(4));
  Write(h.Build(1));
  EXPECT_TRUE(test::Refused(
      path_, "key 'k' claims 5 u8 elements at offset 41, more than the 4 bytes left"));
}

// Enough bytes for the count of length fields, but the strings themselves run out.
TEST_F(GgufTest, ArrayOfStringsRunsOut) {
  GgufBuilder g;
  g.Array("k", test::kGgufString, 3, Cat({g.Str("ab"), g.Count(100), g.Count(0)}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(
      path_, fmt::format("array of key 'k' at offset {} has length 100, past the end of the file",
                         49 + 10)));
}

TEST_F(GgufTest, KeyLengthPastTheEnd) {
  GgufBuilder g;
  g.RawKv(Cat({g.Count(1000), test::Filler(23)}));
  Write(g.Build(1));
  EXPECT_TRUE(
      test::Refused(path_, "key 0 at offset 24 has length 1000, past the end of the file (55)"));
  GgufBuilder h;
  h.RawKv(Cat({h.Count(UINT64_MAX), test::Filler(5)}));
  Write(h.Build(1));
  EXPECT_TRUE(
      test::Refused(path_, "key 0 at offset 24 has length 18446744073709551615, past the end"));
}

TEST_F(GgufTest, StringValueLengthPastTheEnd) {
  GgufBuilder g;
  g.RawKv(Cat(
      {g.Str("general.name"), U32Bytes(test::kGgufString), g.Count(5000), test::TextBytes("xy")}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(
      path_,
      "value of key 'general.name' at offset 48 has length 5000, past the end of the file (58)"));
}

TEST_F(GgufTest, TensorNameLengthPastTheEnd) {
  GgufBuilder g;
  g.String("k", "v").RawTensor(
      Cat({g.Count(1ull << 50), test::TextBytes("name"), test::Filler(20)}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(
      path_,
      "name of tensor 0 at offset 46 has length 1125899906842624, past the end of the file"));
}

TEST_F(GgufTest, ValueTruncated) {
  GgufBuilder g;
  g.RawKv(Cat({g.Str("k"), U32Bytes(test::kGgufU64), test::Filler(5)}));
  Write(g.Build(1));
  EXPECT_TRUE(
      test::Refused(path_, "value of key 'k' at offset 37 needs 8 bytes, but the file ends at 42"));
  GgufBuilder h;
  h.RawKv(Cat({h.Str("abc"), test::Filler(2)}));  // 13 bytes: as many as the smallest key-value
  Write(h.Build(1));
  EXPECT_TRUE(test::Refused(
      path_, "type of key 'abc' at offset 35 needs 4 bytes, but the file ends at 37"));
}

TEST_F(GgufTest, KeyLongerThan64KiB) {
  GgufBuilder g;
  g.Scalar(std::string(65537, 'k'), test::kGgufU8, 1);
  Write(g.Build(1));
  EXPECT_TRUE(
      test::Refused(path_, "key 0 at offset 24 is 65537 bytes long; keys are limited to 65536"));
  GgufBuilder h;
  h.Scalar(std::string(65536, 'k'), test::kGgufU8, 1);
  Write(h.Build(1));
  TensorTable t;
  const Status s = Read(&t);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST_F(GgufTest, TensorNameLongerThan64KiB) {
  GgufBuilder g;
  g.Tensor(std::string(65537, 'n'), {1}, test::kGgmlF32, 0);
  Write(g.Build(32, test::Filler(4)));
  EXPECT_TRUE(test::Refused(
      path_, "tensor 0 at offset 24: name is 65537 bytes long; names are limited to 65536"));
}

// ---- Types ----

TEST_F(GgufTest, NestedArray) {
  GgufBuilder g;
  g.Array("k", test::kGgufArray, 1, Cat({U32Bytes(test::kGgufU8), g.Count(1), test::Filler(1)}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(path_, "key 'k' is an array of arrays"));
}

TEST_F(GgufTest, UnknownValueType) {
  GgufBuilder g;
  g.RawKv(Cat({g.Str("k"), U32Bytes(13), test::Filler(8)}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(path_, "key 'k' at offset 33 has unknown value type 13"));
  GgufBuilder h;
  h.RawKv(Cat({h.Str("k"), U32Bytes(0xFFFFFFFF), test::Filler(8)}));
  Write(h.Build(1));
  EXPECT_TRUE(test::Refused(path_, "has unknown value type 4294967295"));
  GgufBuilder a;
  a.Array("k", 13, 1, test::Filler(8));
  Write(a.Build(1));
  EXPECT_TRUE(test::Refused(path_, "key 'k' is an array of unknown value type 13"));
}

TEST_F(GgufTest, AlignmentZeroOrNotAPowerOfTwo) {
  for (uint32_t a : {0u, 48u, 3u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(a);
    Write(GgufBuilder().U32("general.alignment", a).Build(1));
    EXPECT_TRUE(test::Refused(path_, fmt::format("general.alignment {} is not a power of two", a)));
  }
}

TEST_F(GgufTest, AlignmentOfTheWrongType) {
  Write(GgufBuilder().Scalar("general.alignment", test::kGgufU64, 32).Build(1));
  EXPECT_TRUE(test::Refused(path_, "general.alignment has type u64; it must be u32"));
  Write(GgufBuilder().String("general.alignment", "32").Build(1));
  EXPECT_TRUE(test::Refused(path_, "general.alignment has type string; it must be u32"));
  Write(GgufBuilder().Scalar("general.alignment", test::kGgufI32, 32).Build(1));
  EXPECT_TRUE(test::Refused(path_, "general.alignment has type i32; it must be u32"));
  GgufBuilder g;
  g.RawKv(Cat({g.Str("general.alignment"), U32Bytes(99), U32Bytes(32)}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(path_, "general.alignment has type unknown; it must be u32"));
}

TEST_F(GgufTest, UnknownGgmlType) {
  // 4 and 5 were Q4_2 and Q4_3, 31 to 33 and 36 to 38 the removed repackings; 39 is the last.
  for (uint32_t type : {4u, 5u, 31u, 33u, 36u, 40u, 200u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(type);
    Write(GgufBuilder().Tensor("w", {32}, type, 0).Build(32, test::Filler(256)));
    EXPECT_TRUE(test::Refused(
        path_, fmt::format("tensor 'w' (info at offset 24): unknown ggml type {}", type)));
  }
}

TEST_F(GgufTest, MoreThanFourDims) {
  Write(GgufBuilder().Tensor("w", {1, 1, 1, 1, 1}, test::kGgmlF32, 0).Build(32, test::Filler(4)));
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'w' (info at offset 24): 5 dimensions; GGUF allows at most 4"));
  GgufBuilder g;
  g.RawTensor(Cat({g.Str("w"), U32Bytes(0xFFFFFFFF), test::Filler(16)}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(path_, "tensor 'w' (info at offset 24): 4294967295 dimensions"));
}

// ---- Sizes ----

TEST_F(GgufTest, DimsProductOverflowsInt64) {
  Write(GgufBuilder()
            .Tensor("w", {1ull << 32, 1ull << 31}, test::kGgmlI8, 0)
            .Build(32, test::Filler(8)));
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'w' (info at offset 24): the element count overflows int64"));
  // Exactly INT64_MAX elements: no overflow, the bytes are simply not there.
  Write(GgufBuilder().Tensor("w", {INT64_MAX}, test::kGgmlI8, 0).Build(32, test::Filler(8)));
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'w': 9223372036854775807 bytes at data offset 0 run past the end"));
}

TEST_F(GgufTest, DimPastInt64) {
  Write(GgufBuilder().Tensor("w", {4, 1ull << 63}, test::kGgmlF32, 0).Build(32, test::Filler(8)));
  EXPECT_TRUE(test::Refused(path_,
                            "tensor 'w' (info at offset 24): dimension 1 is 9223372036854775808, "
                            "past the largest int64"));
  Write(GgufBuilder().Tensor("w", {0, UINT64_MAX}, test::kGgmlF32, 0).Build(32, test::Filler(8)));
  EXPECT_TRUE(test::Refused(path_, "dimension 1 is 18446744073709551615, past the largest int64"));
}

TEST_F(GgufTest, ByteSizeOverflows) {
  Write(GgufBuilder().Tensor("w", {1ull << 60, 4}, test::kGgmlF64, 0).Build(32, test::Filler(8)));
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'w' (info at offset 24): the byte size overflows 64 bits"));
  // A quantized type packs fewer than two bytes per element, so its size cannot overflow; a
  // claim of 2^62 elements is refused for the bytes it needs (2^57 blocks of 34).
  Write(GgufBuilder().Tensor("w", {1ull << 62}, test::kGgmlQ8_0, 0).Build(32, test::Filler(8)));
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'w': 4899916394579099648 bytes at data offset 0 run past the end"));
}

// ---- Offsets ----

TEST_F(GgufTest, OffsetNotAMultipleOfTheAlignment) {
  Write(GgufBuilder().Tensor("w", {1}, test::kGgmlF32, 16).Build(32, test::Filler(64)));
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': offset 16 is not a multiple of the alignment 32"));
  Write(GgufBuilder()
            .U32("general.alignment", 64)
            .Tensor("w", {1}, test::kGgmlF32, 32)
            .Build(64, test::Filler(64)));
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': offset 32 is not a multiple of the alignment 64"));
}

TEST_F(GgufTest, TensorPastTheEndOfTheFile) {
  GgufBuilder g;
  g.Tensor("w", {16}, test::kGgmlF32, 0);
  Write(g.Build(32, test::Filler(32)));
  const uint64_t data = RoundUp(g.HeadSize(), 32);
  EXPECT_TRUE(test::Refused(
      path_, fmt::format("tensor 'w': 64 bytes at data offset 0 run past the end of the file "
                         "(data section [{}, {}))",
                         data, data + 32)));
  GgufBuilder h;
  h.Tensor("w", {1}, test::kGgmlF32, UINT64_MAX - 31);  // aligned, and would wrap
  Write(h.Build(32, test::Filler(32)));
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'w': 4 bytes at data offset 18446744073709551584 run past the end"));
  GgufBuilder e;
  e.Tensor("w", {0}, test::kGgmlF32, 64);  // empty, but past the end all the same
  Write(e.Build(32, test::Filler(32)));
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': 0 bytes at data offset 64 run past the end"));
}

TEST_F(GgufTest, OverlappingTensors) {
  Write(GgufBuilder()
            .Tensor("a", {16}, test::kGgmlF32, 0)
            .Tensor("b", {8}, test::kGgmlF32, 32)
            .Build(32, test::Filler(64)));
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'b' at data offset 32 overlaps tensor 'a' (64 bytes at 0)"));
  // Listed the other way round, and one inside the other.
  Write(GgufBuilder()
            .Tensor("inner", {1}, test::kGgmlF32, 32)
            .Tensor("outer", {32}, test::kGgmlF32, 0)
            .Build(32, test::Filler(128)));
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'inner' at data offset 32 overlaps tensor 'outer' (128 bytes at 0)"));
}

TEST_F(GgufTest, DuplicateTensorNames) {
  Write(GgufBuilder()
            .Tensor("w", {1}, test::kGgmlF32, 0)
            .Tensor("w", {1}, test::kGgmlF32, 32)
            .Build(32, test::Filler(64)));
  EXPECT_TRUE(test::Refused(path_, "tensor name 'w' appears twice"));
}

// ---- Found by this suite, fixed since ----

// Keys and tensor names go into messages escaped: one holding a newline must not split the
// one-line message format.h promises.
TEST_F(GgufTest, NameWithNewlineKeepsTheMessageOneLine) {
  Write(GgufBuilder().Tensor("w\nloadbench: all good", {1}, 200, 0).Build(32, test::Filler(4)));
  EXPECT_TRUE(test::Refused(path_, "unknown ggml type 200"));
  GgufBuilder g;
  g.RawKv(Cat({g.Str("k\nloadbench: all good"), U32Bytes(13)}));
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(path_, "unknown value type 13"));
}

// When the file ends before the padded start of the data section, even an empty tensor lies
// past its end: refused, as gguf.h says every tensor lies inside the file.
TEST_F(GgufTest, EmptyTensorPastAShortFile) {
  GgufBuilder g;
  g.Tensor("w", {0}, test::kGgmlF32, 0);
  ASSERT_NE(g.HeadSize() % 32, 0u);
  Write(g.Build(1));
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': 0 bytes at data offset 0 run past the end"));
}

}  // namespace
}  // namespace loadbench
