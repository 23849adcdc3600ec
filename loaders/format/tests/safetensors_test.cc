// safetensors reading: files the reader must accept (with the table it must give back), a round
// trip through EncodeSafetensorsHead, then hostile files built byte by byte, each of which must
// be refused as bad input with a message that names the path, the place and the number.
#include "loaders/format/safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "loaders/base/file_io.h"
#include "loaders/format/format.h"
#include "tests/support/format_builders.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

class SafetensorsTest : public ::testing::Test {
 protected:
  // Writes a file of `json` (unpadded) and `data_bytes` filler bytes; returns its path.
  std::string Write(std::string_view json, uint64_t data_bytes = 0) {
    test::WriteFileBytes(path_, test::SafetensorsBytes(json, test::Filler(data_bytes)));
    return path_;
  }
  Status Read(TensorTable* t) { return ReadTensorTableFromPath(path_, t); }

  test::TempDir dir_;
  const std::string path_ = dir_.File("model.safetensors");
};

std::string Obj(std::initializer_list<std::string> entries) {
  return fmt::format("{{{}}}", fmt::join(entries, ","));
}

// ---- Files the reader accepts ----

TEST_F(SafetensorsTest, UnpaddedHeaderPutsDataAtAnOddOffset) {
  std::string json =
      Obj({test::StEntry("a", "F32", "[2]", 0, 8), test::StEntry("b", "U8", "[3]", 8, 11)});
  if (json.size() % 2 == 0) json += ' ';
  Write(json, 11);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  const uint64_t data_offset = 8 + json.size();
  ASSERT_EQ(data_offset % 2, 1u);
  EXPECT_EQ(t.format, "safetensors");
  EXPECT_EQ(t.file_size, data_offset + 11);
  EXPECT_EQ(t.data_offset, data_offset);
  EXPECT_EQ(t.header["header_bytes"], json.size());
  EXPECT_EQ(t.header["padded_to_8"], false);
  ASSERT_EQ(t.tensors.size(), 2u);
  EXPECT_EQ(t.tensors[0].name, "a");
  EXPECT_EQ(t.tensors[0].dtype, "f32");
  EXPECT_EQ(t.tensors[0].shape, (std::vector<uint64_t>{2}));
  EXPECT_EQ(t.tensors[0].offset, data_offset);
  EXPECT_EQ(t.tensors[0].size, 8u);
  EXPECT_EQ(t.tensors[1].name, "b");
  EXPECT_EQ(t.tensors[1].dtype, "u8");
  EXPECT_EQ(t.tensors[1].offset, data_offset + 8);
  EXPECT_EQ(t.tensors[1].size, 3u);
  EXPECT_EQ(t.tensor_bytes, 11u);
  EXPECT_EQ(t.header["unclaimed_bytes"], 0u);
}

// Writers sort header keys by dtype size or alphabetically; the table follows the data.
TEST_F(SafetensorsTest, TableComesOutInDataOrder) {
  Write(Obj({test::StEntry("m", "F32", "[1]", 8, 12), test::StEntry("z", "F32", "[1]", 0, 4),
             test::StEntry("a", "F32", "[1]", 4, 8)}),
        12);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 3u);
  EXPECT_EQ(t.tensors[0].name, "z");
  EXPECT_EQ(t.tensors[1].name, "a");
  EXPECT_EQ(t.tensors[2].name, "m");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(t.tensors[i].offset, t.data_offset + 4 * i);
}

TEST_F(SafetensorsTest, MetadataPresentAnywhereOrAbsent) {
  Write(Obj({test::StEntry("w", "F16", "[2]", 0, 4), R"("__metadata__":{"format":"pt","b":"é"})"}),
        4);
  TensorTable t;
  Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.header["metadata"], (nlohmann::ordered_json{{"format", "pt"}, {"b", "é"}}));
  EXPECT_FALSE(t.expected_checksum.has_value());
  ASSERT_EQ(t.tensors.size(), 1u);

  Write(Obj({test::StEntry("w", "F16", "[2]", 0, 4)}), 4);
  s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(t.header["metadata"].is_null());
  EXPECT_TRUE(t.header["checksum"].is_null());

  Write(R"({"__metadata__":{}})", 0);
  s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.header["metadata"], nlohmann::ordered_json::object());
  EXPECT_TRUE(t.tensors.empty());
}

TEST_F(SafetensorsTest, ZeroTensors) {
  Write("{}", 0);
  TensorTable t;
  Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(t.tensors.empty());
  EXPECT_EQ(t.tensor_bytes, 0u);
  EXPECT_EQ(t.data_offset, 10u);
  EXPECT_EQ(t.file_size, 10u);
  EXPECT_EQ(t.header["unclaimed_bytes"], 0u);
  // Bytes after an empty table belong to no tensor.
  Write("{}      ", 5);
  s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.data_offset, 16u);
  EXPECT_EQ(t.header["padded_to_8"], true);
  EXPECT_EQ(t.header["unclaimed_bytes"], 5u);
}

// Eight elements of each dtype take exactly as many bytes as one element has bits.
TEST_F(SafetensorsTest, EveryDTypeWithItsSize) {
  struct Row {
    const char* name;
    uint64_t bits;
  };
  const Row rows[] = {
      {"BOOL", 8},    {"U8", 8},   {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8},
      {"F8_E8M0", 8}, {"I16", 16}, {"U16", 16}, {"F16", 16},    {"BF16", 16},
      {"I32", 32},    {"U32", 32}, {"F32", 32}, {"C64", 64},    {"F64", 64},
      {"I64", 64},    {"U64", 64}, {"F4", 4},   {"F6_E2M3", 6}, {"F6_E3M2", 6},
  };
  std::vector<std::string> entries;
  uint64_t pos = 0;
  for (const Row& r : rows) {
    entries.push_back(test::StEntry(fmt::format("t.{}", r.name), r.name, "[8]", pos, pos + r.bits));
    pos += r.bits;
  }
  std::string json = "{";
  for (size_t i = 0; i < entries.size(); ++i) json += (i ? "," : "") + entries[i];
  Write(json + "}", pos);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), std::size(rows));
  uint64_t at = t.data_offset;
  for (size_t i = 0; i < std::size(rows); ++i) {
    SCOPED_TRACE(rows[i].name);
    std::string lower = rows[i].name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(t.tensors[i].name, fmt::format("t.{}", rows[i].name));
    EXPECT_EQ(t.tensors[i].dtype, lower);
    EXPECT_EQ(t.tensors[i].size, rows[i].bits);
    EXPECT_EQ(t.tensors[i].offset, at);
    at += rows[i].bits;
  }
  EXPECT_EQ(t.tensor_bytes, pos);
}

TEST_F(SafetensorsTest, ZeroDimTensorIsOneElement) {
  Write(Obj({test::StEntry("scalar", "F64", "[]", 0, 8)}), 8);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 1u);
  EXPECT_TRUE(t.tensors[0].shape.empty());
  EXPECT_EQ(t.tensors[0].size, 8u);
}

TEST_F(SafetensorsTest, UnknownFieldsInAnEntryAreSkipped) {
  Write(R"({"w":{"note":"x","extra":{"a":[1,{"dtype":"F64","shape":[-1]}],"c":true},)"
        R"("dtype":"I16","n":-3,"f":1.5,"shape":[3],"z":null,"data_offsets":[0,6],"q":[[[]]]}})",
        6);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 1u);
  EXPECT_EQ(t.tensors[0].dtype, "i16");
  EXPECT_EQ(t.tensors[0].shape, (std::vector<uint64_t>{3}));
  EXPECT_EQ(t.tensors[0].size, 6u);
}

TEST_F(SafetensorsTest, UnknownFieldNestingLimit) {
  const auto nested = [](int depth) {
    return fmt::format(R"({{"w":{{"x":{}{},"dtype":"U8","shape":[1],"data_offsets":[0,1]}}}})",
                       std::string(depth, '['), std::string(depth, ']'));
  };
  Write(nested(64), 1);
  TensorTable t;
  const Status s = Read(&t);
  EXPECT_TRUE(s.ok()) << s.message();
  Write(nested(65), 1);
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': x nests deeper than 64 levels"));
}

TEST_F(SafetensorsTest, RankLimit) {
  std::string ones = "[1";
  for (int i = 1; i < 64; ++i) ones += ",1";
  Write(Obj({test::StEntry("w", "U8", ones + "]", 0, 1)}), 1);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.tensors[0].shape.size(), 64u);
  Write(Obj({test::StEntry("w", "U8", ones + ",1]", 0, 1)}), 1);
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': shape has more than 64 dimensions"));
}

TEST_F(SafetensorsTest, GapsAreAcceptedAndCounted) {
  Write(Obj({test::StEntry("a", "U8", "[4]", 0, 4), test::StEntry("b", "U8", "[4]", 8, 12)}), 15);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.tensor_bytes, 8u);
  EXPECT_EQ(t.header["unclaimed_bytes"], 4u + 3u);
}

TEST_F(SafetensorsTest, TouchingTensorsDoNotOverlap) {
  Write(Obj({test::StEntry("b", "U8", "[4]", 4, 8), test::StEntry("a", "U8", "[4]", 0, 4)}), 8);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.header["unclaimed_bytes"], 0u);
}

TEST_F(SafetensorsTest, EmptyTensorsOverlapNothing) {
  Write(Obj({test::StEntry("a", "U8", "[8]", 0, 8), test::StEntry("in", "U8", "[0]", 4, 4),
             test::StEntry("start", "F32", "[0, 5]", 0, 0),
             test::StEntry("start2", "F32", "[5, 0]", 0, 0),
             test::StEntry("end", "BF16", "[0]", 8, 8)}),
        8);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 5u);
  EXPECT_EQ(t.tensor_bytes, 8u);
  EXPECT_EQ(t.header["unclaimed_bytes"], 0u);
  for (const auto& x : t.tensors) {
    if (x.name != "a") {
      EXPECT_EQ(x.size, 0u) << x.name;
    }
  }
}

TEST_F(SafetensorsTest, ChecksumAndGenSpecMetadata) {
  Write(R"({"__metadata__":{"loadbench.xxh3_64":"0123456789abcdef",)"
        R"("loadbench.gen_spec":"00000000000000ff"}})");
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(t.expected_checksum.has_value());
  EXPECT_EQ(*t.expected_checksum, 0x0123456789abcdefull);
  EXPECT_EQ(t.header["checksum"], "0123456789abcdef");
  EXPECT_EQ(t.header["gen_spec_id"], "00000000000000ff");
}

TEST_F(SafetensorsTest, MalformedChecksumMetadata) {
  for (const char* bad : {"0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0",
                          "0x23456789abcdef", "", "zzzzzzzzzzzzzzzz"}) {
    SCOPED_TRACE(bad);
    Write(fmt::format(R"({{"__metadata__":{{"loadbench.xxh3_64":"{}"}}}})", bad));
    EXPECT_TRUE(test::Refused(
        path_,
        fmt::format("__metadata__ 'loadbench.xxh3_64' is '{}', not 16 lower-case hex", bad)));
  }
  Write(R"({"__metadata__":{"loadbench.gen_spec":"nothex"}})");
  EXPECT_TRUE(test::Refused(path_, "__metadata__ 'loadbench.gen_spec' is 'nothex'"));
}

// F4 packs two elements to a byte, the F6 types four to three bytes.
TEST_F(SafetensorsTest, SubByteDTypes) {
  Write(
      Obj({test::StEntry("f4", "F4", "[2, 3]", 0, 3), test::StEntry("f6", "F6_E2M3", "[4]", 3, 6)}),
      6);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 2u);
  EXPECT_EQ(t.tensors[0].size, 3u);
  EXPECT_EQ(t.tensors[1].size, 3u);

  Write(Obj({test::StEntry("f4", "F4", "[3]", 0, 2)}), 2);
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'f4': 3 elements of F4 (4 bits each) do not fill whole bytes"));
  Write(Obj({test::StEntry("f4", "F4", "[3]", 0, 1)}), 2);
  EXPECT_TRUE(test::Refused(path_, "tensor 'f4': 3 elements of F4"));
  Write(Obj({test::StEntry("f6", "F6_E3M2", "[2]", 0, 2)}), 2);
  EXPECT_TRUE(test::Refused(path_, "tensor 'f6': 2 elements of F6_E3M2 (6 bits each)"));
}

// ---- Round trip through the writer ----

TEST(SafetensorsRoundTripTest, EncodedHeadReadsBack) {
  const std::vector<WlfTensorSpec> specs = {
      {"embed", WlfDType::kBF16, {3, 5}}, {"norm", WlfDType::kF32, {7}},
      {"byte", WlfDType::kU8, {1}},       {"empty", WlfDType::kF32, {0, 4}},
      {"scalar", WlfDType::kF64, {}},     {"mask", WlfDType::kBool, {3, 1, 3}},
      {"odd", WlfDType::kI8, {4097}},
  };
  const std::vector<std::string> dtypes = {"bf16", "f32", "u8", "f32", "f64", "bool", "i8"};
  const std::vector<uint64_t> sizes = {30, 28, 1, 0, 8, 9, 4097};
  test::TempDir dir;
  const std::string path = dir.File("rt.safetensors");
  // Every padding length: the metadata value's length moves the end of the JSON through all
  // eight residues.
  for (size_t extra = 0; extra < 8; ++extra) {
    SCOPED_TRACE(testing::Message() << "metadata value of " << extra << " bytes");
    FileLayout l;
    std::vector<std::byte> head;
    const Status e = EncodeSafetensorsHead(
        specs, {{kSafetensorsChecksumKey, "00000000deadbeef"}, {"pad", std::string(extra, 'p')}},
        &l, &head);
    ASSERT_TRUE(e.ok()) << e.message();
    EXPECT_EQ(head.size(), l.data_offset);
    EXPECT_EQ(l.data_offset % 8, 0u);
    std::vector<std::byte> file = head;
    const std::vector<std::byte> data = test::Filler(l.data_end - l.data_offset);
    file.insert(file.end(), data.begin(), data.end());
    test::WriteFileBytes(path, file);

    TensorTable t;
    const Status s = ReadTensorTableFromPath(path, &t);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(t.format, "safetensors");
    EXPECT_EQ(t.data_offset, l.data_offset);
    EXPECT_EQ(t.file_size, l.file_size);
    EXPECT_EQ(t.header["padded_to_8"], true);
    EXPECT_EQ(t.header["unclaimed_bytes"], 0u);
    ASSERT_TRUE(t.expected_checksum.has_value());
    EXPECT_EQ(*t.expected_checksum, 0xdeadbeefu);
    // Contiguous in spec order, so data order is spec order (the empty tensor shares its
    // offset with the next one and sorts stably before it).
    ASSERT_EQ(t.tensors.size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      SCOPED_TRACE(specs[i].name);
      EXPECT_EQ(t.tensors[i].name, specs[i].name);
      EXPECT_EQ(t.tensors[i].dtype, dtypes[i]);
      EXPECT_EQ(t.tensors[i].shape, specs[i].shape);
      EXPECT_EQ(t.tensors[i].offset, l.tensor_offsets[i]);
      EXPECT_EQ(t.tensors[i].size, l.tensor_sizes[i]);
      EXPECT_EQ(t.tensors[i].size, sizes[i]);
    }
  }
}

// Every misalignment, against metadata values that move the end of the JSON through every
// residue mod 64: the data area starts `misalign` past a 64-byte boundary, the padding is only
// spaces, and the file reads back with the planned offsets. misalign 0 is the usual padding to 8.
TEST(SafetensorsRoundTripTest, MisalignedDataArea) {
  const std::vector<WlfTensorSpec> specs = {{"a", WlfDType::kBF16, {4, 32}},
                                            {"b", WlfDType::kF32, {16}}};
  test::TempDir dir;
  const std::string path = dir.File("mis.safetensors");
  for (uint64_t misalign = 0; misalign < 64; ++misalign) {
    for (size_t extra : {size_t{0}, size_t{13}, size_t{40}}) {
      SCOPED_TRACE(testing::Message() << "misalign " << misalign << ", extra " << extra);
      FileLayout l;
      std::vector<std::byte> head;
      const Status e =
          EncodeSafetensorsHead(specs, {{"pad", std::string(extra, 'p')}}, &l, &head, misalign);
      ASSERT_TRUE(e.ok()) << e.message();
      if (misalign == 0) {
        EXPECT_EQ(l.data_offset % 8, 0u);
      } else {
        EXPECT_EQ(l.data_offset % 64, misalign);
      }
      // The JSON ends at its last '}', followed only by spaces, fewer than 64 of them.
      const std::string text(reinterpret_cast<const char*>(head.data()) + 8, head.size() - 8);
      const size_t close = text.find_last_of('}');
      ASSERT_NE(close, std::string::npos);
      EXPECT_EQ(text.find_first_not_of(' ', close + 1), std::string::npos);
      EXPECT_LT(text.size() - close - 1, misalign == 0 ? 8u : 64u);

      std::vector<std::byte> file = head;
      const std::vector<std::byte> data = test::Filler(l.data_end - l.data_offset);
      file.insert(file.end(), data.begin(), data.end());
      test::WriteFileBytes(path, file);
      TensorTable t;
      const Status s = ReadTensorTableFromPath(path, &t);
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(t.data_offset, l.data_offset);
      ASSERT_EQ(t.tensors.size(), 2u);
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(t.tensors[i].offset, l.tensor_offsets[i]);
        if (misalign != 0) {
          EXPECT_EQ(t.tensors[i].offset % 64, misalign);  // sizes are 256 and 64
        }
      }
    }
  }
  FileLayout l;
  std::vector<std::byte> head;
  const Status s = EncodeSafetensorsHead(specs, {}, &l, &head, 64);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("misalign 64"), std::string::npos) << s.message();
}

// ---- The 8-byte header length ----

TEST_F(SafetensorsTest, HeaderLengthPastTheEnd) {
  Write("{}", 0);  // 10 bytes
  test::PatchU64(path_, 0, 3);
  EXPECT_TRUE(test::Refused(path_, "header length 3 runs past the end of the file (10 bytes)"));
  test::PatchU64(path_, 0, 1000);
  EXPECT_TRUE(test::Refused(path_, "header length 1000 runs past the end of the file (10 bytes)"));
}

TEST_F(SafetensorsTest, HeaderLengthOverTheLimit) {
  Write("{}", 0);
  test::PatchU64(path_, 0, kSafetensorsMaxHeader + 1);
  EXPECT_TRUE(test::Refused(path_, "header length 104857601 exceeds the limit of 104857600 bytes"));
  test::PatchU64(path_, 0, UINT64_MAX);
  EXPECT_TRUE(test::Refused(path_, "header length 18446744073709551615 exceeds the limit"));
}

TEST_F(SafetensorsTest, HeaderLengthZero) {
  Write("{}", 0);
  test::PatchU64(path_, 0, 0);
  EXPECT_TRUE(test::Refused(path_, "header length is 0"));
}

// The JSON must start right after the length; anything else is not taken for safetensors.
TEST_F(SafetensorsTest, HeaderThatIsNotAnObject) {
  Write(R"([{"a":1}])", 0);
  EXPECT_TRUE(test::Refused(path_, "unknown format"));
  UniqueFd fd;
  ASSERT_TRUE(OpenReadOnly(path_, 0, &fd).ok());
  TensorTable t;
  const Status s = ReadSafetensors(FileSource(fd.get(), path_, 17), &t);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("the header is an array, not a JSON object"), std::string::npos)
      << s.message();
}

// ---- Data offsets ----

TEST_F(SafetensorsTest, OffsetsPastTheEndOfTheData) {
  Write(Obj({test::StEntry("w", "F32", "[2]", 0, 8)}), 7);
  const uint64_t data_offset = 8 + Obj({test::StEntry("w", "F32", "[2]", 0, 8)}).size();
  EXPECT_TRUE(test::Refused(
      path_, fmt::format("tensor 'w': data_offsets [0, 8] run past the end of the data (7 bytes "
                         "from offset {})",
                         data_offset)));
  // Near 2^64, where begin + data_offset would wrap.
  Write(Obj({test::StEntry("w", "U8", "[0]", UINT64_MAX, UINT64_MAX)}), 7);
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'w': data_offsets [18446744073709551615, 18446744073709551615] run past"));
  Write(Obj({test::StEntry("w", "U8", "[8]", UINT64_MAX - 7, 0)}), 8);
  EXPECT_TRUE(test::Refused(path_, "end before they begin"));
}

TEST_F(SafetensorsTest, EndBeforeBegin) {
  Write(Obj({test::StEntry("w", "U8", "[6]", 10, 4)}), 16);
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': data_offsets [10, 4] end before they begin"));
}

TEST_F(SafetensorsTest, OffsetsThatDoNotMatchTheShape) {
  Write(Obj({test::StEntry("w", "F32", "[2]", 0, 6)}), 8);
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'w': data_offsets [0, 6] hold 6 bytes, but shape [2] of F32 needs 8"));
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  Write(Obj({test::StEntry("a", "F32", "[2]", 0, 8), test::StEntry("b", "F32", "[2]", 4, 12)}), 12);
  EXPECT_TRUE(test::Refused(path_, "tensor 'b' at [4, 12) overlaps tensor 'a' ending at 8"));
  // One inside another, listed first.
  Write(
      Obj({test::StEntry("inner", "U8", "[2]", 6, 8), test::StEntry("outer", "U8", "[16]", 0, 16)}),
      16);
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'inner' at [6, 8) overlaps tensor 'outer' ending at 16"));
  // The same range twice.
  Write(Obj({test::StEntry("x", "U8", "[4]", 4, 8), test::StEntry("y", "I8", "[4]", 4, 8)}), 8);
  EXPECT_TRUE(test::Refused(path_, "at [4, 8) overlaps tensor '"));
}

// ---- Sizes that overflow ----

TEST_F(SafetensorsTest, ShapeProductOverflows) {
  Write(Obj({test::StEntry("w", "F32", "[4294967296, 4294967296, 16]", 0, 8)}), 8);
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'w': shape 4294967296x4294967296x16 has 2^64 or more elements"));
  // A later zero does not save a product that has already overflowed (nor does the
  // reference reader's checked product).
  Write(Obj({test::StEntry("w", "F32", "[4294967296, 4294967296, 0]", 0, 0)}), 8);
  EXPECT_TRUE(test::Refused(path_, "has 2^64 or more elements"));
}

TEST_F(SafetensorsTest, ByteCountOverflows) {
  Write(Obj({test::StEntry("w", "F64", "[4611686018427387904, 8]", 0, 8)}), 8);
  EXPECT_TRUE(
      test::Refused(path_, "tensor 'w': shape 4611686018427387904x8 has 2^64 or more elements"));
  // 2^61 elements fit, 2^61 * 8 bytes do not.
  Write(Obj({test::StEntry("w", "F64", "[2305843009213693952]", 0, 8)}), 8);
  EXPECT_TRUE(test::Refused(
      path_, "tensor 'w': 2305843009213693952 elements of F64 overflow a 64-bit byte count"));
}

TEST_F(SafetensorsTest, UnknownDType) {
  Write(Obj({test::StEntry("w", "F128", "[1]", 0, 16)}), 16);
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': unknown dtype 'F128'"));
  Write(Obj({test::StEntry("w", "f32", "[1]", 0, 4)}), 4);  // names are upper case
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': unknown dtype 'f32'"));
  Write(Obj({test::StEntry("w", "", "[1]", 0, 4)}), 4);
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': unknown dtype ''"));
}

// ---- JSON that breaks the schema: one file per case ----

struct SchemaCase {
  const char* name;
  const char* json;
  const char* reason;
};

class SafetensorsSchemaTest : public ::testing::TestWithParam<SchemaCase> {};

TEST_P(SafetensorsSchemaTest, Refused) {
  test::TempDir dir;
  const std::string path = dir.File("schema.safetensors");
  test::WriteFileBytes(path, test::SafetensorsBytes(GetParam().json, test::Filler(64)));
  EXPECT_TRUE(test::Refused(path, GetParam().reason));
}

// An entry with every field right, then `rest` inside it.
#define ENTRY_THEN(rest) R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4])" rest "}}"
const SchemaCase kSchemaCases[] = {
    {"EntryIsString", R"({"w":"F32"})", "tensor 'w' is a string, not an object"},
    {"EntryIsArray", R"({"w":[1,2]})", "tensor 'w' is an array, not an object"},
    {"EntryIsNull", R"({"w":null})", "tensor 'w' is null, not an object"},
    {"DtypeIsNumber", R"({"w":{"dtype":5,"shape":[1],"data_offsets":[0,4]}})",
     "tensor 'w': dtype is a number, not a string"},
    {"DtypeIsArray", R"({"w":{"dtype":["F32"],"shape":[1],"data_offsets":[0,4]}})",
     "tensor 'w': dtype is an array, not a string"},
    {"ShapeHoldsString", R"({"w":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})",
     "tensor 'w': shape holds a string, not an integer"},
    {"ShapeHoldsFloat", R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})",
     "tensor 'w': shape holds 1.0, which is not an integer from 0 to 2^64-1"},
    {"ShapeHoldsNegative", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
     "tensor 'w': shape holds -1, which is negative"},
    {"ShapeHolds2To64",
     R"({"w":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})",
     "tensor 'w': shape holds 18446744073709551616, which is not an integer"},
    {"ShapeHoldsArray", R"({"w":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})",
     "tensor 'w': shape holds an array, not an integer"},
    {"ShapeHoldsNull", R"({"w":{"dtype":"F32","shape":[null],"data_offsets":[0,4]}})",
     "tensor 'w': shape holds null, not an integer"},
    {"ShapeIsNumber", R"({"w":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})",
     "tensor 'w': shape is a number, not an array of integers"},
    {"OffsetsHaveThree", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",
     "tensor 'w': data_offsets has more than 2 entries"},
    {"OffsetsHaveOne", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}})",
     "tensor 'w': data_offsets has 1 entries, not 2"},
    {"OffsetsHaveNone", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[]}})",
     "tensor 'w': data_offsets has 0 entries, not 2"},
    {"OffsetsNegative", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})",
     "tensor 'w': data_offsets holds -4, which is negative"},
    {"OffsetsFloat", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4e0]}})",
     "tensor 'w': data_offsets holds 4e0, which is not an integer"},
    {"OffsetsString", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":"0,4"}})",
     "tensor 'w': data_offsets is a string, not an array of integers"},
    {"MetadataValueNumber", R"({"__metadata__":{"k":1}})",
     "__metadata__ 'k' is a number, not a string"},
    {"MetadataValueObject", R"({"__metadata__":{"k":{}}})",
     "__metadata__ 'k' is an object, not a string"},
    {"MetadataValueNull", R"({"__metadata__":{"k":null}})",
     "__metadata__ 'k' is null, not a string"},
    {"MetadataIsString", R"({"__metadata__":"k"})",
     "__metadata__ is a string, not an object of strings"},
    {"MetadataIsArray", R"({"__metadata__":["k"]})",
     "__metadata__ is an array, not an object of strings"},
    {"MissingDtype", R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "tensor 'w' has no dtype"},
    {"MissingShape", R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "tensor 'w' has no shape"},
    {"MissingOffsets", R"({"w":{"dtype":"F32","shape":[1]}})", "tensor 'w' has no data_offsets"},
    {"EmptyEntry", R"({"w":{}})", "tensor 'w' has no dtype"},
    {"DuplicateTensor",
     R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
     R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
     "tensor 'w' appears twice"},
    {"DuplicateMetadata", R"({"__metadata__":{},"__metadata__":{}})",
     "key '__metadata__' appears twice"},
    {"DuplicateDtype", ENTRY_THEN(R"(,"dtype":"F32")"), "tensor 'w': field dtype appears twice"},
    {"DuplicateShape", ENTRY_THEN(R"(,"shape":[1])"), "tensor 'w': field shape appears twice"},
    {"DuplicateOffsets", ENTRY_THEN(R"(,"data_offsets":[0,4])"),
     "tensor 'w': field data_offsets appears twice"},
    {"TruncatedJson", R"({"w":{"dtype":"F32","shape":[1],"data_off)", "JSON error at header byte"},
    {"TruncatedAfterComma", R"({"w":{"dtype":"F32",)", "JSON error at header byte"},
    {"TrailingGarbage", R"({}x)", "JSON error at header byte 3"},
    {"TrailingObject", R"({}{})", "JSON error at header byte 3"},
    {"Comment", R"({/**/})", "JSON error at header byte"},
    {"InvalidUtf8Key", "{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     "ill-formed UTF-8"},
    {"InvalidUtf8Dtype", "{\"w\":{\"dtype\":\"F\xc0\xb2\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     "ill-formed UTF-8"},
    {"NumberOverflow", ENTRY_THEN(R"(,"x":1e400)"), "JSON error at header byte"},
};
#undef ENTRY_THEN

INSTANTIATE_TEST_SUITE_P(Safetensors, SafetensorsSchemaTest, ::testing::ValuesIn(kSchemaCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- Found by this suite, fixed since ----

// A header may hold millions of __metadata__ keys (100 MiB allows about ten million); shown in
// an ordered_json object, which looks keys up linearly, they took time quadratic in their
// count. At most 1024 are shown, the rest counted, and loadbench's own keys still read.
TEST_F(SafetensorsTest, MetadataKeysShownAreCapped) {
  std::string json = R"({"__metadata__":{)";
  for (int i = 0; i < 5000; ++i) json += fmt::format(R"("k{}":"",)", i);
  json += R"("loadbench.xxh3_64":"0123456789abcdef"}})";
  Write(json);
  TensorTable t;
  const Status s = Read(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(t.expected_checksum.has_value());
  EXPECT_EQ(*t.expected_checksum, 0x0123456789abcdefull);
  EXPECT_LE(t.header["metadata"].size(), 1024u);
  EXPECT_EQ(t.header.value("metadata_keys_not_shown", uint64_t{0}), 5001u - 1024u);
}

// A tensor whose byte count fits in 64 bits but whose bit count does not (2^61 U8 elements) is
// not an overflow: its data_offsets do not hold the 2^61 bytes the shape needs.
TEST_F(SafetensorsTest, FittingByteCountIsNotCalledAnOverflow) {
  Write(Obj({test::StEntry("w", "U8", "[2305843009213693952]", 0, 8)}), 8);
  EXPECT_TRUE(test::Refused(path_, "tensor 'w': data_offsets [0, 8] hold 8 bytes, but shape "
                                   "[2305843009213693952] of U8 needs 2305843009213693952"));
}

// Names and metadata values go into messages escaped: a name holding a newline (JSON "\n")
// must not split the one-line message format.h promises.
TEST_F(SafetensorsTest, NameWithNewlineKeepsTheMessageOneLine) {
  Write(Obj({test::StEntry(R"(w\nloadbench: all good)", "F128", "[1]", 0, 4)}), 4);
  EXPECT_TRUE(test::Refused(path_, "unknown dtype 'F128'"));
  Write(R"({"__metadata__":{"loadbench.xxh3_64":"x\ny"}})");
  EXPECT_TRUE(test::Refused(path_, "__metadata__ 'loadbench.xxh3_64'"));
}

}  // namespace
}  // namespace loadbench
