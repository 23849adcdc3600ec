// WLF reading and writing: a round trip through the writer and the reader, then one test per
// validation the reader must make (each checks that the file is refused for the right reason),
// then big-endian files (every field and element swapped, the same table read back, the
// validations still made), then a seeded fuzz loop over the header, table, aux area and tail
// in both byte orders.
#include "loaders/format/wlf.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <boost/endian/conversion.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "tests/support/load_with.h"
#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

// The layout docs/formats.md fixes, checked against the structs the fixture's offsets come from.
static_assert(test::kHeaderMagic == 0 && test::kHeaderVersion == 4 &&
              test::kHeaderTensorCount == 8 && test::kHeaderMetaOffset == 16 &&
              test::kHeaderDataOffset == 24 && test::kHeaderFileSize == 32 &&
              test::kHeaderFlags == 40 && test::kHeaderReserved0 == 48 &&
              test::kHeaderReserved1 == 56);
static_assert(test::kEntryNameOffset == 0 && test::kEntryDType == 8 && test::kEntryPad == 12 &&
              test::kEntryShapeOffset == 16 && test::kEntryShapeCount == 24 &&
              test::kEntryDataOffset == 32 && test::kEntryDataSize == 40);
static_assert(test::WlfEntryField(2, test::kEntryDataSize) == 64 + 2 * 48 + 40);

uint64_t U64At(const std::vector<std::byte>& bytes, uint64_t off) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + off, sizeof v);
  return v;
}

// Reads `path` and expects it refused as bad input with a one-line message that starts with
// the path and contains `reason`.
void ExpectRefused(const std::string& path, const std::string& reason) {
  TensorTable t;
  const Status s = ReadTensorTableFromPath(path, &t);
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
  EXPECT_TRUE(s.message().starts_with(path))
      << "message does not start with the path: " << s.message();
  EXPECT_NE(s.message().find(reason), std::string::npos)
      << "expected reason '" << reason << "' in: " << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "not one line: " << s.message();
}

class WlfTest : public ::testing::Test {
 protected:
  // A valid file of OddTensors() with 64-byte tensor alignment; tests corrupt it.
  void SetUp() override {
    path_ = dir_.File("odd.wlf");
    written_ = test::WriteWlfFile(path_, test::OddTensors(), 64, 7);
    TensorTable t;
    ASSERT_TRUE(ReadTensorTableFromPath(path_, &t).ok()) << "the unpatched file must be valid";
  }

  uint64_t FileSize() const { return written_.layout.file_size; }
  uint64_t TailOffset() const { return written_.layout.file_size - sizeof(WlfTail); }
  uint64_t EntryField(uint64_t i, uint64_t field) const {
    return U64At(test::ReadFileBytes(path_), test::WlfEntryField(i, field));
  }

  test::TempDir dir_;
  std::string path_;
  test::WrittenWlf written_{};
};

// ---- Round trip ----

void ExpectRoundTrip(uint64_t align) {
  SCOPED_TRACE(testing::Message() << "align " << align);
  test::TempDir dir;
  const std::string path = dir.File("rt.wlf");
  const auto specs = test::OddTensors();
  const test::WrittenWlf w = test::WriteWlfFile(path, specs, align, 42);

  TensorTable t;
  const Status s = ReadTensorTableFromPath(path, &t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.format, "wlf");
  EXPECT_EQ(t.file_size, w.layout.file_size);
  EXPECT_EQ(t.file_size, std::filesystem::file_size(path));
  EXPECT_EQ(t.data_offset, w.layout.data_offset);
  EXPECT_EQ(t.data_offset % 4096, 0u);
  ASSERT_TRUE(t.expected_checksum.has_value());
  EXPECT_EQ(*t.expected_checksum, w.checksum);

  const std::vector<std::string> dtypes = {"bf16", "f32", "u8", "f32", "f16", "i8"};
  const std::vector<uint64_t> sizes = {30, 28, 1, 0, 1122, 4097};
  ASSERT_EQ(t.tensors.size(), specs.size());
  uint64_t total = 0;
  const std::vector<std::byte> file = test::ReadFileBytes(path);
  std::vector<TensorBytes> views;
  for (size_t i = 0; i < specs.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "tensor " << i);
    const TensorInfo& x = t.tensors[i];
    EXPECT_EQ(x.name, specs[i].name);
    EXPECT_EQ(x.dtype, dtypes[i]);
    EXPECT_EQ(x.shape, specs[i].shape);
    EXPECT_EQ(x.offset, w.layout.tensor_offsets[i]);
    EXPECT_EQ(x.size, w.layout.tensor_sizes[i]);
    EXPECT_EQ(x.size, sizes[i]);
    EXPECT_EQ(x.offset % align, 0u);
    EXPECT_GE(x.offset, t.data_offset);
    if (i > 0) {
      EXPECT_GE(x.offset, t.tensors[i - 1].offset + t.tensors[i - 1].size);
    }
    total += x.size;
    ASSERT_LE(x.offset + x.size, file.size());
    const std::vector<std::byte> expect = test::TensorData(42, i, x.size);
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), file.begin() + x.offset));
    for (std::byte b : expect) ASSERT_NE(b, std::byte{0});
    views.emplace_back(file.data() + x.offset, x.size);
  }
  EXPECT_EQ(t.tensor_bytes, total);
  // The fixture's checksum is the one the loaders compute.
  EXPECT_EQ(ChecksumTensors(views), w.checksum);
  EXPECT_EQ(t.header["tensor_count"], specs.size());
  EXPECT_EQ(t.header["meta_offset"], 64u);
}

TEST(WlfRoundTripTest, Align64) { ExpectRoundTrip(64); }
TEST(WlfRoundTripTest, Align4096) { ExpectRoundTrip(4096); }

TEST(WlfRoundTripTest, ZeroTensors) {
  test::TempDir dir;
  const std::string path = dir.File("empty-table.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, {});
  TensorTable t;
  const Status s = ReadTensorTableFromPath(path, &t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(t.tensors.empty());
  EXPECT_EQ(t.tensor_bytes, 0u);
  EXPECT_EQ(t.data_offset, 4096u);
  EXPECT_EQ(t.file_size, 4096u + sizeof(WlfTail));
  ASSERT_TRUE(t.expected_checksum.has_value());
  EXPECT_EQ(*t.expected_checksum, XXH3_64bits(nullptr, 0));
  EXPECT_EQ(*t.expected_checksum, w.checksum);
}

TEST(WlfRoundTripTest, DTypeNamesRoundTrip) {
  for (uint32_t code = 0; code < kWlfDTypeCount; ++code) {
    std::string name;
    uint64_t size = 0;
    ASSERT_TRUE(WlfDTypeInfo(code, &name, &size));
    EXPECT_GE(size, 1u);
    WlfDType back;
    ASSERT_TRUE(WlfDTypeFromName(name, &back)) << name;
    EXPECT_EQ(static_cast<uint32_t>(back), code);
  }
  EXPECT_FALSE(WlfDTypeInfo(kWlfDTypeCount, nullptr, nullptr));
  WlfDType ignored;
  EXPECT_FALSE(WlfDTypeFromName("f128", &ignored));
}

// ---- PlanWlf ----

TEST(WlfPlanTest, RejectsBadAlignment) {
  for (uint64_t align : {uint64_t{0}, uint64_t{32}, uint64_t{48}, uint64_t{100}, uint64_t{4095}}) {
    FileLayout l;
    const Status s = PlanWlf(test::OddTensors(), align, &l);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << "align " << align;
    EXPECT_NE(s.message().find("alignment"), std::string::npos) << s.message();
  }
  for (uint64_t align : {uint64_t{64}, uint64_t{4096}, uint64_t{1} << 20}) {
    FileLayout l;
    EXPECT_TRUE(PlanWlf(test::OddTensors(), align, &l).ok()) << "align " << align;
    EXPECT_EQ(l.data_offset % 4096, 0u);
    EXPECT_EQ(l.data_offset % align, 0u);
  }
}

TEST(WlfPlanTest, RejectsSizeOverflow) {
  FileLayout l;
  const Status s = PlanWlf({{"huge", WlfDType::kF64, {1ull << 40, 1ull << 40}}}, 64, &l);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
}

// The writer must not produce files its own reader refuses.
TEST(WlfPlanTest, RejectsWhatTheReaderWouldRefuse) {
  FileLayout l;
  Status s = PlanWlf({{std::string(5000, 'n'), WlfDType::kU8, {1}}}, 64, &l);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("name"), std::string::npos) << s.message();
  s = PlanWlf({{std::string("a\0b", 3), WlfDType::kU8, {1}}}, 64, &l);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  s = PlanWlf({{"deep", WlfDType::kU8, std::vector<uint64_t>(17, 1)}}, 64, &l);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("dimensions"), std::string::npos) << s.message();
  // At the limits: accepted and read back.
  test::TempDir dir;
  const std::string path = dir.File("limits.wlf");
  test::WriteWlfFile(path, {{std::string(4096, 'n'), WlfDType::kU8, std::vector<uint64_t>(16, 1)}},
                     64);
  TensorTable t;
  s = ReadTensorTableFromPath(path, &t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.tensors.size(), 1u);
  EXPECT_EQ(t.tensors[0].name.size(), 4096u);
  EXPECT_EQ(t.tensors[0].shape.size(), 16u);
}

// ---- Paths that are not weight files ----

TEST(WlfValidationTest, MissingPath) {
  test::TempDir dir;
  ExpectRefused(dir.File("no-such-file.wlf"), "No such file");
}

TEST(WlfValidationTest, DirectoryPath) {
  test::TempDir dir;
  ExpectRefused(dir.path(), "is a directory");
}

TEST(WlfValidationTest, EmptyFile) {
  test::TempDir dir;
  const std::string path = dir.File("empty.wlf");
  test::WriteFileBytes(path, {});
  ExpectRefused(path, "empty file");
}

TEST(WlfValidationTest, ShorterThanAnyFormat) {
  test::TempDir dir;
  const std::string path = dir.File("three.wlf");
  test::WriteFileBytes(path, {std::byte{'G'}, std::byte{'I'}, std::byte{'E'}});
  ExpectRefused(path, "too short");
}

// ---- Header ----

TEST_F(WlfTest, ShorterThanHeader) {
  std::vector<std::byte> bytes = test::ReadFileBytes(path_);
  bytes.resize(40);
  test::WriteFileBytes(path_, bytes);
  ExpectRefused(path_, "shorter than the 64-byte header");
}

TEST_F(WlfTest, WrongMagic) {
  test::PatchU32(path_, test::kHeaderMagic, 0x12345678);
  ExpectRefused(path_, "unknown format");
  // ReadWlf itself, called directly, names the magic.
  UniqueFd fd;
  ASSERT_TRUE(OpenReadOnly(path_, 0, &fd).ok());
  TensorTable t;
  const Status s = ReadWlf(FileSource(fd.get(), path_, FileSize()), &t);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("wrong magic 0x12345678"), std::string::npos) << s.message();
}

// A little-endian file whose magic alone reads swapped is taken for big-endian, and refused
// as one: its version, read swapped, is 2^24.
TEST_F(WlfTest, ByteSwappedMagic) {
  test::PatchU32(path_, test::kHeaderMagic, kWlfMagicSwapped);
  ExpectRefused(path_, "invalid big-endian WLF file: unsupported version 16777216");
}

TEST_F(WlfTest, UnsupportedVersion) {
  test::PatchU32(path_, test::kHeaderVersion, 2);
  ExpectRefused(path_, "unsupported version 2");
}

TEST_F(WlfTest, TruncatedFile) {
  std::filesystem::resize_file(path_, FileSize() - 100);
  ExpectRefused(path_, "truncated");
}

TEST_F(WlfTest, HeaderFileSizeLargerThanFile) {
  test::PatchU64(path_, test::kHeaderFileSize, FileSize() + 4096);
  ExpectRefused(path_, "truncated");
}

TEST_F(WlfTest, TrailingBytes) {
  std::vector<std::byte> bytes = test::ReadFileBytes(path_);
  bytes.resize(bytes.size() + 5, std::byte{0x55});
  test::WriteFileBytes(path_, bytes);
  ExpectRefused(path_, "trailing bytes");
}

TEST_F(WlfTest, BadTailMagic) {
  test::PatchU64(path_, TailOffset(), 0);
  ExpectRefused(path_, "tail sentinel");
}

TEST_F(WlfTest, TailFileSizeDisagrees) {
  test::PatchU64(path_, TailOffset() + 8, FileSize() - 1);
  ExpectRefused(path_, "tail sentinel");
}

TEST_F(WlfTest, MetaOffsetNot64) {
  test::PatchU64(path_, test::kHeaderMetaOffset, 128);
  ExpectRefused(path_, "meta_offset 128 is not 64");
}

TEST_F(WlfTest, DataOffsetNotPageMultiple) {
  test::PatchU64(path_, test::kHeaderDataOffset, 4096 + 64);
  ExpectRefused(path_, "data_offset 4160 is not a multiple of 4096");
}

TEST_F(WlfTest, DataOffsetZero) {
  test::PatchU64(path_, test::kHeaderDataOffset, 0);
  ExpectRefused(path_, "data_offset 0");
}

TEST_F(WlfTest, DataOffsetPastEnd) {
  const uint64_t past = (FileSize() + 4095) / 4096 * 4096;
  test::PatchU64(path_, test::kHeaderDataOffset, past);
  ExpectRefused(path_, "past the end");
}

TEST_F(WlfTest, DataOffsetHuge) {
  test::PatchU64(path_, test::kHeaderDataOffset, ~uint64_t{4095});
  ExpectRefused(path_, "past the end");
}

TEST_F(WlfTest, TensorCountHuge) {
  // Must be refused from the header alone: allocating for it would abort the process.
  test::PatchU64(path_, test::kHeaderTensorCount, uint64_t{1} << 63);
  ExpectRefused(path_, "tensor_count 9223372036854775808 does not fit");
}

TEST_F(WlfTest, TensorCountJustTooLarge) {
  test::PatchU64(path_, test::kHeaderTensorCount, (4096 - 64) / 48 + 1);
  ExpectRefused(path_, "does not fit");
}

// ---- Tensor entries ----

TEST_F(WlfTest, NameOffsetPastMetadata) {
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryNameOffset),
                 written_.layout.data_offset);
  ExpectRefused(path_, "name_offset 4096 outside the metadata area");
}

TEST_F(WlfTest, NameOffsetInsideHeader) {
  test::PatchU64(path_, test::WlfEntryField(1, test::kEntryNameOffset), 8);
  ExpectRefused(path_, "tensor 1: name_offset 8 outside the metadata area");
}

TEST_F(WlfTest, NameOffsetHuge) {
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryNameOffset), ~uint64_t{0});
  ExpectRefused(path_, "name_offset");
}

TEST_F(WlfTest, NameNotNulTerminated) {
  // Point the name at the last 10 bytes of the metadata area and fill them: no NUL before the
  // data area starts.
  const uint64_t at = written_.layout.data_offset - 10;
  const std::string fill(10, 'x');
  test::PatchBytes(path_, at, fill.data(), fill.size());
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryNameOffset), at);
  ExpectRefused(path_, "not NUL-terminated");
}

TEST_F(WlfTest, UnknownDType) {
  test::PatchU32(path_, test::WlfEntryField(2, test::kEntryDType), kWlfDTypeCount);
  ExpectRefused(path_, "unknown dtype code 15");
}

TEST_F(WlfTest, UnknownDTypeAllBits) {
  test::PatchU32(path_, test::WlfEntryField(0, test::kEntryDType), 0xFFFFFFFFu);
  ExpectRefused(path_, "unknown dtype code 4294967295");
}

TEST_F(WlfTest, ShapeCountHuge) {
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryShapeCount), uint64_t{1} << 62);
  ExpectRefused(path_, "shape_count 4611686018427387904 exceeds 16");
}

TEST_F(WlfTest, ShapeOffsetPastMetadata) {
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryShapeOffset),
                 written_.layout.data_offset - 8);  // two dims: the second is past the area
  ExpectRefused(path_, "shape_offset");
}

TEST_F(WlfTest, ShapeOffsetHuge) {
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryShapeOffset), ~uint64_t{7});
  ExpectRefused(path_, "shape_offset");
}

TEST_F(WlfTest, ShapeProductOverflow) {
  const uint64_t shape = EntryField(0, test::kEntryShapeOffset);  // odd.0: bf16 [3, 5]
  test::PatchU64(path_, shape, uint64_t{1} << 40);
  test::PatchU64(path_, shape + 8, uint64_t{1} << 40);
  ExpectRefused(path_, "shape product overflows");
}

TEST_F(WlfTest, ByteSizeOverflow) {
  // 2^62 elements fit a u64, 2^62 * 4 bytes of f32 do not.
  const uint64_t shape = EntryField(1, test::kEntryShapeOffset);  // odd.1: f32 [7]
  test::PatchU64(path_, shape, uint64_t{1} << 62);
  ExpectRefused(path_, "does not match shape and dtype");
}

TEST_F(WlfTest, DataSizeMismatch) {
  test::PatchU64(path_, test::WlfEntryField(4, test::kEntryDataSize), 1122 + 2);
  ExpectRefused(path_, "'odd.4': data_size 1124 does not match shape and dtype");
}

TEST_F(WlfTest, TensorPastDataArea) {
  // The last tensor moved so that it ends past the tail's start.
  const uint64_t off = (TailOffset() - 4097 + 64) / 64 * 64;
  test::PatchU64(path_, test::WlfEntryField(5, test::kEntryDataOffset), off);
  ExpectRefused(path_, "outside the data area");
}

TEST_F(WlfTest, TensorOffsetPlusSizeOverflows) {
  // data_offset + data_size wraps past 2^64: a naive `off + len <= size` would accept it.
  test::PatchU64(path_, test::WlfEntryField(5, test::kEntryDataOffset), ~uint64_t{63});
  ExpectRefused(path_, "outside the data area");
}

TEST_F(WlfTest, TensorBeforeDataArea) {
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryDataOffset),
                 written_.layout.data_offset - 64);
  ExpectRefused(path_, "outside the data area");
}

TEST_F(WlfTest, OverlappingTensors) {
  test::PatchU64(path_, test::WlfEntryField(1, test::kEntryDataOffset),
                 written_.layout.tensor_offsets[0]);
  ExpectRefused(path_, "overlaps the previous tensor");
}

TEST_F(WlfTest, MisalignedTensor) {
  test::PatchU64(path_, test::WlfEntryField(0, test::kEntryDataOffset),
                 written_.layout.tensor_offsets[0] + 1);
  ExpectRefused(path_, "is not 64-byte aligned");
}

// ---- Big-endian files ----

constexpr std::endian kBig = std::endian::big;

// The `n` bytes of `b` at `off` are those of `a` at `off`, reversed.
bool ReversedAt(const std::vector<std::byte>& a, const std::vector<std::byte>& b, uint64_t off,
                uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (a[off + i] != b[off + n - 1 - i]) return false;
  }
  return true;
}

TEST(WlfSwapElementsTest, ReversesEachWholeElement) {
  const std::vector<std::byte> in = {std::byte{1}, std::byte{2}, std::byte{3},
                                     std::byte{4}, std::byte{5}, std::byte{6},
                                     std::byte{7}, std::byte{8}, std::byte{9}};
  auto swapped = [&](WlfDType dt) {
    std::vector<std::byte> v = in;
    SwapWlfElements(dt, v.data(), v.size());
    std::vector<int> out;
    for (std::byte b : v) out.push_back(static_cast<int>(b));
    return out;
  };
  // A trailing partial element is left alone.
  EXPECT_EQ(swapped(WlfDType::kBF16), (std::vector<int>{2, 1, 4, 3, 6, 5, 8, 7, 9}));
  EXPECT_EQ(swapped(WlfDType::kF16), (std::vector<int>{2, 1, 4, 3, 6, 5, 8, 7, 9}));
  EXPECT_EQ(swapped(WlfDType::kF32), (std::vector<int>{4, 3, 2, 1, 8, 7, 6, 5, 9}));
  EXPECT_EQ(swapped(WlfDType::kF64), (std::vector<int>{8, 7, 6, 5, 4, 3, 2, 1, 9}));
  EXPECT_EQ(swapped(WlfDType::kU8), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // Unaligned start: elements carry no alignment promise.
  std::vector<std::byte> v = in;
  SwapWlfElements(WlfDType::kF32, v.data() + 1, 8);
  EXPECT_EQ(static_cast<int>(v[0]), 1);
  EXPECT_EQ(static_cast<int>(v[1]), 5);
  EXPECT_EQ(static_cast<int>(v[4]), 2);
  EXPECT_EQ(static_cast<int>(v[8]), 6);
}

// A big-endian file of OddTensors beside the little-endian one of the same seed: every integer
// field of the header, table, shape arrays and tail is the other's byte-reversed (the checksum
// aside: it covers other bytes), names are the same bytes, and every tensor element (bf16, f32,
// f16) is reversed, 1-byte ones unchanged.
TEST(WlfBigEndianTest, EveryFieldAndElementIsByteSwapped) {
  test::TempDir dir;
  const std::string le_path = dir.File("le.wlf"), be_path = dir.File("be.wlf");
  const auto specs = test::OddTensors();
  const test::WrittenWlf le = test::WriteWlfFile(le_path, specs, 64, 11);
  const test::WrittenWlf be = test::WriteWlfFile(be_path, specs, 64, 11, kBig);
  const std::vector<std::byte> L = test::ReadFileBytes(le_path), B = test::ReadFileBytes(be_path);
  ASSERT_EQ(L.size(), B.size());
  EXPECT_EQ(std::memcmp(L.data(), "GIEW", 4), 0);
  EXPECT_EQ(std::memcmp(B.data(), "WEIG", 4), 0);

  const std::pair<uint64_t, uint64_t> header_fields[] = {
      {test::kHeaderMagic, 4},      {test::kHeaderVersion, 4},    {test::kHeaderTensorCount, 8},
      {test::kHeaderMetaOffset, 8}, {test::kHeaderDataOffset, 8}, {test::kHeaderFileSize, 8},
      {test::kHeaderFlags, 8},      {test::kHeaderReserved1, 8}};
  for (auto [off, n] : header_fields) EXPECT_TRUE(ReversedAt(L, B, off, n)) << "header @" << off;
  EXPECT_EQ(boost::endian::big_to_native(U64At(B, test::kHeaderReserved0)), be.checksum);
  EXPECT_NE(be.checksum, le.checksum);

  const std::pair<uint64_t, uint64_t> entry_fields[] = {
      {test::kEntryNameOffset, 8},  {test::kEntryDType, 4},      {test::kEntryPad, 4},
      {test::kEntryShapeOffset, 8}, {test::kEntryShapeCount, 8}, {test::kEntryDataOffset, 8},
      {test::kEntryDataSize, 8}};
  for (size_t i = 0; i < specs.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "tensor " << i << " (" << specs[i].name << ")");
    for (auto [field, n] : entry_fields) {
      EXPECT_TRUE(ReversedAt(L, B, test::WlfEntryField(i, field), n)) << "entry field " << field;
    }
    const uint64_t name = U64At(L, test::WlfEntryField(i, test::kEntryNameOffset));
    EXPECT_EQ(std::memcmp(L.data() + name, B.data() + name, specs[i].name.size() + 1), 0);
    const uint64_t shape = U64At(L, test::WlfEntryField(i, test::kEntryShapeOffset));
    for (size_t d = 0; d < specs[i].shape.size(); ++d) {
      EXPECT_TRUE(ReversedAt(L, B, shape + 8 * d, 8)) << "dimension " << d;
    }
    uint64_t elem = 0;
    ASSERT_TRUE(WlfDTypeInfo(static_cast<uint32_t>(specs[i].dtype), nullptr, &elem));
    const uint64_t off = le.layout.tensor_offsets[i], size = le.layout.tensor_sizes[i];
    ASSERT_EQ(size % elem, 0u);
    for (uint64_t e = 0; e < size; e += elem) {
      ASSERT_TRUE(ReversedAt(L, B, off + e, elem)) << "element at byte " << e;
    }
    // Swapped for real (bf16 odd.0, f32 odd.1, f16 odd.4): the fixture's bytes are not
    // palindromes element by element.
    if (elem > 1 && size > 0) {
      EXPECT_NE(std::memcmp(L.data() + off, B.data() + off, size), 0);
    }
  }
  EXPECT_TRUE(ReversedAt(L, B, L.size() - 16, 8)) << "tail magic";
  EXPECT_TRUE(ReversedAt(L, B, L.size() - 8, 8)) << "tail file_size";
}

void ExpectSameTensors(const TensorTable& a, const TensorTable& b) {
  EXPECT_EQ(a.file_size, b.file_size);
  EXPECT_EQ(a.data_offset, b.data_offset);
  EXPECT_EQ(a.tensor_bytes, b.tensor_bytes);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "tensor " << i);
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].offset, b.tensors[i].offset);
    EXPECT_EQ(a.tensors[i].size, b.tensors[i].size);
  }
}

// Read back, a big-endian file has the little-endian one's table and says it is big-endian;
// its stored checksum is that of the bytes as stored, which is what a load delivers.
TEST(WlfBigEndianTest, ReadsBackWithTheSameTableAndItsOwnChecksum) {
  for (uint64_t align : {uint64_t{64}, uint64_t{4096}}) {
    SCOPED_TRACE(testing::Message() << "align " << align);
    test::TempDir dir;
    const std::string le_path = dir.File("le.wlf"), be_path = dir.File("be.wlf");
    test::WriteWlfFile(le_path, test::OddTensors(), align, 5);
    const test::WrittenWlf be = test::WriteWlfFile(be_path, test::OddTensors(), align, 5, kBig);
    TensorTable tl, tb;
    ASSERT_TRUE(ReadTensorTableFromPath(le_path, &tl).ok());
    const Status s = ReadTensorTableFromPath(be_path, &tb);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_FALSE(tl.big_endian);
    EXPECT_TRUE(tb.big_endian);
    EXPECT_EQ(tl.header["byte_order"], "little");
    EXPECT_EQ(tb.header["byte_order"], "big");
    EXPECT_EQ(tb.header["magic"], tl.header["magic"]);
    EXPECT_EQ(tb.header["tensor_count"], tl.header["tensor_count"]);
    ExpectSameTensors(tl, tb);

    ASSERT_TRUE(tb.expected_checksum.has_value());
    EXPECT_EQ(*tb.expected_checksum, be.checksum);
    UniqueFd fd;
    ASSERT_TRUE(OpenReadOnly(be_path, 0, &fd).ok());
    uint64_t sum = 0;
    ASSERT_TRUE(
        ChecksumFile(FileSource(fd.get(), be_path, std::filesystem::file_size(be_path)), tb, &sum)
            .ok());
    EXPECT_EQ(sum, *tb.expected_checksum);
    for (const char* strategy : {"pread", "mmap"}) {
      std::unique_ptr<Loader> loader;
      std::vector<TensorBytes> views;
      const Status ls = test::LoadWith(strategy, be_path, &loader, &views);
      ASSERT_TRUE(ls.ok()) << strategy << ": " << ls.message();
      EXPECT_EQ(ChecksumTensors(views), *tb.expected_checksum) << strategy;
    }
  }
}

TEST(WlfBigEndianTest, ZeroTensors) {
  test::TempDir dir;
  const std::string path = dir.File("empty-table.wlf");
  test::WriteWlfFile(path, {}, 4096, 1, kBig);
  TensorTable t;
  const Status s = ReadTensorTableFromPath(path, &t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(t.big_endian);
  EXPECT_TRUE(t.tensors.empty());
  EXPECT_EQ(t.file_size, 4096u + sizeof(WlfTail));
  EXPECT_EQ(t.expected_checksum, XXH3_64bits(nullptr, 0));
}

TEST(WlfBigEndianTest, InspectJsonShowsByteOrder) {
  test::TempDir dir;
  for (std::endian order : {std::endian::little, kBig}) {
    const std::string name = order == kBig ? "big" : "little";
    const std::string path = dir.File(name + ".wlf");
    test::WriteWlfFile(path, test::OddTensors(), 64, 2, order);
    const test::ProcessResult r = test::RunLoadbench({"inspect", "--json", path});
    ASSERT_EQ(r.exit_code, 0) << test::Describe(r);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["header"]["byte_order"], name);
    EXPECT_EQ(j["tensors"].size(), test::OddTensors().size());
  }
}

// The validations hold in a big-endian file: each corrupted field, written big-endian, is
// refused for the same reason as in a little-endian one, and the message says big-endian.
class WlfBigEndianCorruptionTest : public WlfTest {
 protected:
  void SetUp() override {
    path_ = dir_.File("odd-be.wlf");
    written_ = test::WriteWlfFile(path_, test::OddTensors(), 64, 7, kBig);
    TensorTable t;
    ASSERT_TRUE(ReadTensorTableFromPath(path_, &t).ok()) << "the unpatched file must be valid";
    ASSERT_TRUE(t.big_endian);
  }
  void PatchU64(uint64_t offset, uint64_t value) { test::PatchU64(path_, offset, value, kBig); }
};

TEST_F(WlfBigEndianCorruptionTest, TruncatedFile) {
  std::filesystem::resize_file(path_, FileSize() - 100);
  ExpectRefused(path_, "invalid big-endian WLF file: truncated");
}

TEST_F(WlfBigEndianCorruptionTest, HeaderFileSizeLargerThanFile) {
  PatchU64(test::kHeaderFileSize, FileSize() + 4096);
  ExpectRefused(path_, "truncated");
}

TEST_F(WlfBigEndianCorruptionTest, TailFileSizeDisagrees) {
  PatchU64(TailOffset() + 8, FileSize() - 1);
  ExpectRefused(path_, "tail sentinel");
}

TEST_F(WlfBigEndianCorruptionTest, TailWrittenLittleEndian) {
  test::PatchU64(path_, TailOffset(), kWlfTailMagic);
  ExpectRefused(path_, "tail sentinel");
}

TEST_F(WlfBigEndianCorruptionTest, DataOffsetWrittenLittleEndian) {
  // 4096 read big-endian is 2^52: a multiple of 4096, far past the end.
  test::PatchU64(path_, test::kHeaderDataOffset, 4096);
  ExpectRefused(path_, "past the end");
}

TEST_F(WlfBigEndianCorruptionTest, TensorCountHuge) {
  PatchU64(test::kHeaderTensorCount, uint64_t{1} << 63);
  ExpectRefused(path_, "tensor_count 9223372036854775808 does not fit");
}

TEST_F(WlfBigEndianCorruptionTest, TensorOffsetPlusSizeOverflows) {
  PatchU64(test::WlfEntryField(5, test::kEntryDataOffset), ~uint64_t{63});
  ExpectRefused(path_, "outside the data area");
}

TEST_F(WlfBigEndianCorruptionTest, TensorPastDataArea) {
  const uint64_t off = (TailOffset() - 4097 + 64) / 64 * 64;
  PatchU64(test::WlfEntryField(5, test::kEntryDataOffset), off);
  ExpectRefused(path_, "outside the data area");
}

TEST_F(WlfBigEndianCorruptionTest, NameOffsetPastMetadata) {
  PatchU64(test::WlfEntryField(0, test::kEntryNameOffset), written_.layout.data_offset);
  ExpectRefused(path_, "name_offset 4096 outside the metadata area");
}

TEST_F(WlfBigEndianCorruptionTest, UnknownDType) {
  test::PatchU32(path_, test::WlfEntryField(2, test::kEntryDType), kWlfDTypeCount, kBig);
  ExpectRefused(path_, "unknown dtype code 15");
}

TEST_F(WlfBigEndianCorruptionTest, ShapeProductOverflow) {
  const uint64_t shape =  // odd.0: bf16 [3, 5]
      boost::endian::big_to_native(EntryField(0, test::kEntryShapeOffset));
  PatchU64(shape, uint64_t{1} << 40);
  PatchU64(shape + 8, uint64_t{1} << 40);
  ExpectRefused(path_, "shape product overflows");
}

TEST_F(WlfBigEndianCorruptionTest, DataSizeMismatch) {
  PatchU64(test::WlfEntryField(4, test::kEntryDataSize), 1122 + 2);
  ExpectRefused(path_, "'odd.4': data_size 1124 does not match shape and dtype");
}

TEST_F(WlfBigEndianCorruptionTest, OverlappingTensors) {
  PatchU64(test::WlfEntryField(1, test::kEntryDataOffset), written_.layout.tensor_offsets[0]);
  ExpectRefused(path_, "overlaps the previous tensor");
}

// ---- Fuzz ----

// Random corruption of the header, table, aux area and tail of a small valid file in byte order
// `order`: the reader must answer ok or bad input, never crash, hang or read out of bounds (run
// under ASan/UBSan in `make test-asan`). When it answers ok, what it returns must be usable as
// is.
void FuzzHeadAndTail(std::endian order) {
  test::TempDir dir;
  const std::string path = dir.File("fuzz.wlf");
  const std::vector<WlfTensorSpec> specs = {{"a", WlfDType::kF32, {3, 5}},
                                            {"bb", WlfDType::kU8, {1}},
                                            {"", WlfDType::kBF16, {0, 9}},
                                            {"dddd", WlfDType::kI16, {2, 2, 2}}};
  const test::WrittenWlf w = test::WriteWlfFile(path, specs, 64, 3, order);
  const std::vector<std::byte> valid = test::ReadFileBytes(path);
  const uint64_t head_used = 64 + 48 * specs.size() + 128;  // header, table, names and shapes
  const uint64_t data_offset = w.layout.data_offset;
  const uint64_t size = valid.size();

  std::mt19937_64 rng(20240601);
  int ok_count = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<std::byte> bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      uint64_t pos;
      // Rarely the tail: a bad sentinel stops the reader before it looks at the table.
      const uint64_t where = rng() % 32;
      if (where < 22) {
        pos = rng() % head_used;  // where the fields are
      } else if (where < 31) {
        pos = rng() % data_offset;
      } else {
        pos = size - 16 + rng() % 16;
      }
      const uint64_t kind = rng() % 4;
      if (kind == 0) {
        bytes[pos] = static_cast<std::byte>(rng());  // any byte
      } else if (kind == 1) {
        bytes[pos] ^= static_cast<std::byte>(1u << (rng() % 8));  // one bit
      } else if (kind == 2) {
        bytes[pos] = std::byte{0xff};
      } else {
        bytes[pos] = std::byte{0};
      }
    }
    test::WriteFileBytes(path, bytes);

    TensorTable t;
    const Status s = ReadTensorTableFromPath(path, &t);
    ASSERT_TRUE(s.ok() || s.code() == Status::Code::kBadInput)
        << "iteration " << iter << ": " << s.code_name() << ": " << s.message();
    if (!s.ok()) {
      ASSERT_TRUE(s.message().starts_with(path)) << s.message();
      continue;
    }
    ++ok_count;
    ASSERT_EQ(t.file_size, size);
    ASSERT_EQ(t.data_offset % 4096, 0u);
    uint64_t prev_end = t.data_offset, total = 0;
    for (const TensorInfo& x : t.tensors) {
      ASSERT_GE(x.offset, prev_end) << "iteration " << iter;
      ASSERT_LE(x.size, size - 16 - x.offset) << "iteration " << iter;
      ASSERT_EQ(x.offset % 64, 0u);
      prev_end = x.offset + x.size;
      total += x.size;
    }
    ASSERT_EQ(t.tensor_bytes, total);
  }
  // Most corruptions are caught, but some (e.g. in reserved fields) are harmless.
  EXPECT_LT(ok_count, 2000);
  ::testing::Test::RecordProperty("ok_after_corruption", ok_count);
}

TEST(WlfFuzzTest, CorruptedHeadAndTail) { FuzzHeadAndTail(std::endian::little); }
TEST(WlfFuzzTest, CorruptedHeadAndTailBigEndian) { FuzzHeadAndTail(kBig); }

}  // namespace
}  // namespace loadbench
