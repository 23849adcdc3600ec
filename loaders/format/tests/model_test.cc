// Sharded models (ReadModel): a single file stays one shard; an index, a folder holding one,
// and a GGUF split are read shard by shard into one table; and every way an index or a split
// can disagree with its shards, lead outside its folder, or be no regular file (a FIFO must not
// block the read), is refused with one line naming the file at fault. Indexes here are written
// by hand, as other tools and people write them.
#include "loaders/format/model.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/format/gguf.h"
#include "loaders/format/safetensors.h"
#include "tests/support/format_builders.h"
#include "tests/support/special_files.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

constexpr uint64_t kSeed = 7;

// The model every test shards: t.0 to t.5, f32, 184 bytes in all. Shards of three hold
// [0, 2), [2, 3) and [3, 6).
const std::vector<WlfTensorSpec> kTensors = {
    {"t.0", WlfDType::kF32, {3}}, {"t.1", WlfDType::kF32, {5, 2}}, {"t.2", WlfDType::kF32, {7}},
    {"t.3", WlfDType::kF32, {1}}, {"t.4", WlfDType::kF32, {4, 4}}, {"t.5", WlfDType::kF32, {9}},
};
constexpr uint64_t kTotalBytes = 184;
constexpr size_t kBounds[] = {0, 2, 3, 6};

uint64_t Bytes(size_t i) {
  uint64_t n = 4;
  for (uint64_t d : kTensors[i].shape) n *= d;
  return n;
}
// Tensor i's bytes, the same in every file that holds it.
std::vector<std::byte> Data(size_t i) { return test::TensorData(kSeed, i, Bytes(i)); }

// xxh3-64 of tensors [begin, end) in order: the checksum of a file or model holding them.
uint64_t Checksum(size_t begin, size_t end) {
  std::vector<std::byte> all;
  for (size_t i = begin; i < end; ++i) {
    const std::vector<std::byte> d = Data(i);
    all.insert(all.end(), d.begin(), d.end());
  }
  return XXH3_64bits(all.data(), all.size());
}
std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

// The file of a head and tensors [begin, end) placed by `l`.
void WriteLaidOut(const std::string& path, const std::vector<std::byte>& head, const FileLayout& l,
                  size_t begin) {
  std::vector<std::byte> file(l.file_size);
  std::memcpy(file.data(), head.data(), head.size());
  for (size_t i = 0; i < l.tensor_offsets.size(); ++i) {
    const std::vector<std::byte> d = Data(begin + i);
    if (!d.empty()) std::memcpy(file.data() + l.tensor_offsets[i], d.data(), d.size());
  }
  test::WriteFileBytes(path, file);
}

void WriteSafetensors(const std::string& path, size_t begin, size_t end,
                      const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  const std::vector<WlfTensorSpec> specs(kTensors.begin() + begin, kTensors.begin() + end);
  FileLayout l;
  std::vector<std::byte> head;
  const Status s = EncodeSafetensorsHead(specs, metadata, &l, &head);
  if (!s.ok()) throw std::runtime_error(s.message());
  WriteLaidOut(path, head, l, begin);
}

void WriteGguf(const std::string& path, size_t begin, size_t end, const std::vector<GgufKv>& kvs) {
  const std::vector<WlfTensorSpec> specs(kTensors.begin() + begin, kTensors.begin() + end);
  FileLayout l;
  std::vector<std::byte> head;
  const Status s = EncodeGgufHead(specs, kvs, 32, &l, &head);
  if (!s.ok()) throw std::runtime_error(s.message());
  WriteLaidOut(path, head, l, begin);
}

// A scalar key-value of GGUF value type `type` (2 u16, 4 u32, 5 i32, 10 u64, 11 i64).
GgufKv Int(const std::string& key, uint32_t type, uint64_t v) {
  std::vector<std::byte> b(test::GgufScalarSize(type));
  std::memcpy(b.data(), &v, b.size());  // little-endian host: the low bytes
  return GgufKv{key, type, b};
}
// The three keys gguf-split writes, with its types (u16, u16, i32).
std::vector<GgufKv> SplitKvs(uint64_t no, uint64_t count, uint64_t tensors) {
  return {Int("split.no", test::kGgufU16, no), Int("split.count", test::kGgufU16, count),
          Int("split.tensors.count", test::kGgufI32, tensors)};
}

void WriteText(const std::string& path, const std::string& text) {
  test::WriteFileBytes(path, test::TextBytes(text));
}

// Every occurrence of `from` in `s` replaced by `to`.
std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// ReadModel refuses `path` as bad input with one line that starts with `at_fault` and contains
// `reason`.
::testing::AssertionResult Refused(const std::string& path, const std::string& at_fault,
                                   const std::string& reason) {
  TensorTable t;
  const Status s = ReadModel(path, &t);
  if (s.ok()) {
    return ::testing::AssertionFailure()
           << "accepted (" << t.tensors.size() << " tensors); expected '" << reason << "'";
  }
  const std::string& m = s.message();
  if (s.code() != Status::Code::kBadInput) {
    return ::testing::AssertionFailure() << "refused as " << s.code_name() << ": " << m;
  }
  if (!m.starts_with(at_fault + ": ")) {
    return ::testing::AssertionFailure() << "message does not start with " << at_fault << ": " << m;
  }
  if (m.find(reason) == std::string::npos) {
    return ::testing::AssertionFailure() << "expected '" << reason << "' in: " << m;
  }
  if (m.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "not one line: " << m;
  }
  return ::testing::AssertionSuccess() << m;
}

// The model's checksum as a run computes it: every tensor read from its shard, in table order.
uint64_t ModelChecksum(const TensorTable& m) {
  std::vector<std::vector<std::byte>> files;
  for (const ShardInfo& s : m.shards) files.push_back(test::ReadFileBytes(s.path));
  std::vector<std::byte> all;
  for (const TensorInfo& t : m.tensors) {
    const auto& f = files.at(t.shard);
    all.insert(all.end(), f.begin() + static_cast<ptrdiff_t>(t.offset),
               f.begin() + static_cast<ptrdiff_t>(t.offset + t.size));
  }
  return XXH3_64bits(all.data(), all.size());
}

class ModelFixture : public ::testing::Test {
 protected:
  std::string Shard(size_t k, const std::string& ext = "safetensors") const {
    return ShardFileName("model", k, 3, ext);
  }
  // The three safetensors shards in `folder` (the temp dir by default); the second stores its
  // own checksum.
  void WriteShards(const std::string& folder = "") const {
    const std::string f = folder.empty() ? dir_.path() : folder;
    for (size_t k = 0; k < 3; ++k) {
      std::vector<std::pair<std::string, std::string>> md;
      if (k == 1) md = {{kSafetensorsChecksumKey, Hex(Checksum(2, 3))}};
      WriteSafetensors(f + "/" + Shard(k), kBounds[k], kBounds[k + 1], md);
    }
  }
  // A good index of the three shards, written by hand: weight_map in no particular order.
  std::string GoodIndex() const {
    return Replace(Replace(R"({
  "metadata": {"total_size": TOTAL, "loadbench.xxh3_64": "SUM", "format": "pt"},
  "weight_map": {
    "t.4": "model-00003-of-00003.safetensors",
    "t.0": "model-00001-of-00003.safetensors",
    "t.2": "model-00002-of-00003.safetensors",
    "t.5": "model-00003-of-00003.safetensors",
    "t.1": "model-00001-of-00003.safetensors",
    "t.3": "model-00003-of-00003.safetensors"
  }
}
)",
                           "TOTAL", std::to_string(kTotalBytes)),
                   "SUM", Hex(Checksum(0, 6)));
  }
  // Writes `text` as the index idx.json in the temp dir; returns its path.
  std::string Index(const std::string& text) const {
    WriteText(index_, text);
    return index_;
  }

  test::TempDir dir_;
  const std::string index_ = dir_.File("model.safetensors.index.json");
};

// ---- A single file ----

class ModelTest : public ModelFixture {};

TEST_F(ModelTest, SingleFileIsOneShardAsReadTensorTableReadsIt) {
  const std::string wlf = dir_.File("m.wlf"), st = dir_.File("m.safetensors");
  test::WriteWlfFile(wlf, test::OddTensors());
  WriteSafetensors(st, 0, 6, {{kSafetensorsChecksumKey, Hex(Checksum(0, 6))}});
  for (const std::string& path : {wlf, st}) {
    SCOPED_TRACE(path);
    TensorTable a, b;
    const Status s = ReadModel(path, &a);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(ReadTensorTableFromPath(path, &b).ok());
    EXPECT_EQ(a.layout, "file");
    EXPECT_FALSE(a.sharded());
    ASSERT_EQ(a.shards.size(), 1u);
    EXPECT_EQ(a.shards[0].path, path);
    EXPECT_EQ(a.shards[0].tensor_count, a.tensors.size());
    EXPECT_EQ(a.format, b.format);
    EXPECT_EQ(a.file_size, b.file_size);
    EXPECT_EQ(a.tensor_bytes, b.tensor_bytes);
    EXPECT_EQ(a.expected_checksum, b.expected_checksum);
    ASSERT_TRUE(a.expected_checksum.has_value());
    EXPECT_EQ(a.header, b.header);
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
      EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
      EXPECT_EQ(a.tensors[i].offset, b.tensors[i].offset);
      EXPECT_EQ(a.tensors[i].shard, 0u);
    }
  }
}

TEST_F(ModelTest, GgufWithSplitCountOneOrNoneIsASingleFile) {
  const std::string one = dir_.File("one.gguf"), none = dir_.File("none.gguf");
  WriteGguf(one, 0, 6, SplitKvs(0, 1, 6));
  WriteGguf(none, 0, 6, {});
  for (const std::string& path : {one, none}) {
    SCOPED_TRACE(path);
    TensorTable t;
    const Status s = ReadModel(path, &t);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(t.layout, "file");
    EXPECT_EQ(t.shards.size(), 1u);
    EXPECT_EQ(t.tensors.size(), 6u);
  }
}

TEST_F(ModelTest, MissingPathIsRefused) {
  TensorTable t;
  const Status s = ReadModel(dir_.File("nothing.safetensors"), &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir_.File("nothing.safetensors")), std::string::npos);
}

// ---- An index ----

class ModelIndexTest : public ModelFixture {};

TEST_F(ModelIndexTest, ThreeSafetensorsShardsReadInShardOrder) {
  WriteShards();
  TensorTable m;
  const Status s = ReadModel(Index(GoodIndex()), &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.format, "safetensors");
  EXPECT_EQ(m.layout, "index");
  EXPECT_TRUE(m.sharded());
  ASSERT_EQ(m.shards.size(), 3u);
  ASSERT_EQ(m.tensors.size(), 6u);
  uint64_t file_size = 0;
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    TensorTable own;
    ASSERT_TRUE(ReadTensorTableFromPath(dir_.File(Shard(k)), &own).ok());
    const ShardInfo& info = m.shards[k];
    EXPECT_EQ(info.path, dir_.File(Shard(k)));
    EXPECT_EQ(info.file_size, own.file_size);
    EXPECT_EQ(info.data_offset, own.data_offset);
    EXPECT_EQ(info.tensor_bytes, own.tensor_bytes);
    EXPECT_EQ(info.first_tensor, kBounds[k]);
    EXPECT_EQ(info.tensor_count, kBounds[k + 1] - kBounds[k]);
    EXPECT_EQ(info.expected_checksum, own.expected_checksum);
    for (size_t i = kBounds[k]; i < kBounds[k + 1]; ++i) {
      EXPECT_EQ(m.tensors[i].name, kTensors[i].name);
      EXPECT_EQ(m.tensors[i].shard, k);
      EXPECT_EQ(m.tensors[i].size, Bytes(i));
      EXPECT_EQ(m.tensors[i].offset, own.tensors[i - kBounds[k]].offset);
    }
    file_size += own.file_size;
  }
  EXPECT_FALSE(m.shards[0].expected_checksum.has_value());
  EXPECT_EQ(m.shards[1].expected_checksum, Checksum(2, 3));  // the shard keeps its own
  EXPECT_EQ(m.file_size, file_size);
  EXPECT_EQ(m.tensor_bytes, kTotalBytes);
  EXPECT_EQ(m.data_offset, m.shards[0].data_offset);
  EXPECT_EQ(m.expected_checksum, Checksum(0, 6));  // the index's
  EXPECT_EQ(m.header["index"], index_);
  EXPECT_EQ(m.header["index_metadata"]["total_size"], kTotalBytes);
  EXPECT_EQ(m.header["index_metadata"]["format"], "pt");
  EXPECT_EQ(m.header["shard_header"]["tensor_count"], 2u);
  // ShardTable gives back each shard as its own file reads.
  const TensorTable second = ShardTable(m, 1);
  ASSERT_EQ(second.tensors.size(), 1u);
  EXPECT_EQ(second.tensors[0].name, "t.2");
  EXPECT_EQ(second.expected_checksum, Checksum(2, 3));
}

TEST_F(ModelIndexTest, MinimalIndexWithoutMetadataHasNoChecksum) {
  WriteShards();
  TensorTable m;
  const Status s = ReadModel(Index(R"({"weight_map":{"t.3":"model-00003-of-00003.safetensors",
    "t.4":"model-00003-of-00003.safetensors","t.5":"model-00003-of-00003.safetensors",
    "t.2":"model-00002-of-00003.safetensors","t.0":"model-00001-of-00003.safetensors",
    "t.1":"model-00001-of-00003.safetensors"}})"),
                             &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.shards.size(), 3u);
  EXPECT_FALSE(m.expected_checksum.has_value());
  EXPECT_TRUE(m.header["index_metadata"].empty());
}

TEST_F(ModelIndexTest, IndexIsToldByContentNotName) {
  WriteShards();
  const std::string odd = dir_.File("weights.bin");
  WriteText(odd, "\n  " + GoodIndex());
  TensorTable m;
  const Status s = ReadModel(odd, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.layout, "index");
  EXPECT_EQ(m.tensors.size(), 6u);
}

TEST_F(ModelIndexTest, WlfShardsAndSubfolders) {
  std::filesystem::create_directory(dir_.File("parts"));
  const std::vector<WlfTensorSpec> a(kTensors.begin(), kTensors.begin() + 4);
  const std::vector<WlfTensorSpec> b(kTensors.begin() + 4, kTensors.end());
  const test::WrittenWlf wa = test::WriteWlfFile(dir_.File("parts/m-00001-of-00002.wlf"), a);
  const test::WrittenWlf wb =
      test::WriteWlfFile(dir_.File("parts/m-00002-of-00002.wlf"), b, 4096, 2);
  const std::string idx = dir_.File("m.wlf.index.json");
  WriteText(idx, R"({"weight_map": {"t.0": "parts/m-00001-of-00002.wlf",
      "t.1": "parts/m-00001-of-00002.wlf", "t.2": "parts/m-00001-of-00002.wlf",
      "t.3": "parts/m-00001-of-00002.wlf", "t.4": "parts/m-00002-of-00002.wlf",
      "t.5": "./parts/m-00002-of-00002.wlf"}})");
  // The same file under two names is two shards holding the same tensors.
  // ("./parts" sorts first.)
  EXPECT_TRUE(Refused(idx, dir_.File("parts/m-00002-of-00002.wlf"),
                      "tensor 't.4' is also in " + dir_.File("./parts/m-00002-of-00002.wlf") +
                          ": a tensor in two shards"));
  WriteText(idx, R"({"weight_map": {"t.0": "parts/m-00001-of-00002.wlf",
      "t.1": "parts/m-00001-of-00002.wlf", "t.2": "parts/m-00001-of-00002.wlf",
      "t.3": "parts/m-00001-of-00002.wlf", "t.4": "parts/m-00002-of-00002.wlf",
      "t.5": "parts/m-00002-of-00002.wlf"}})");
  TensorTable m;
  const Status s = ReadModel(idx, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.format, "wlf");
  ASSERT_EQ(m.shards.size(), 2u);
  EXPECT_EQ(m.shards[0].expected_checksum, wa.checksum);
  EXPECT_EQ(m.shards[1].expected_checksum, wb.checksum);
  EXPECT_FALSE(m.expected_checksum.has_value());
  EXPECT_EQ(m.tensors[4].name, "t.4");
  EXPECT_EQ(m.tensors[4].shard, 1u);
  EXPECT_EQ(m.tensor_bytes, kTotalBytes);
}

TEST_F(ModelIndexTest, ALinkInsideTheFolderIsFollowed) {
  WriteShards();
  std::filesystem::create_symlink(Shard(1), dir_.File("alias.safetensors"));
  TensorTable m;
  const Status s = ReadModel(
      Index(Replace(GoodIndex(), "model-00002-of-00003.safetensors", "alias.safetensors")), &m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.shards.size(), 3u);
  EXPECT_EQ(m.shards[0].path, dir_.File("alias.safetensors"));  // file-name order
  EXPECT_EQ(m.tensors[0].name, "t.2");
}

TEST_F(ModelIndexTest, NamesOutsideTheFolderAreRefused) {
  const std::string sub = dir_.File("sub");
  std::filesystem::create_directory(sub);
  WriteShards();     // in the temp dir, outside sub/
  WriteShards(sub);  // and in sub/
  const std::string idx = sub + "/idx.json";
  const std::string rest = R"(, "t.1": "model-00001-of-00003.safetensors",
    "t.2": "model-00002-of-00003.safetensors", "t.3": "model-00003-of-00003.safetensors",
    "t.4": "model-00003-of-00003.safetensors", "t.5": "model-00003-of-00003.safetensors"}})";
  // An absolute path, even to a file inside the folder.
  WriteText(idx, R"({"weight_map": {"t.0": ")" + sub + "/" + Shard(0) + "\"" + rest);
  EXPECT_TRUE(Refused(idx, idx, "outside the index's folder (an absolute path)"));
  WriteText(idx, R"({"weight_map": {"t.0": "/etc/passwd")" + rest);
  EXPECT_TRUE(Refused(idx, idx, "weight_map names '/etc/passwd', outside the index's folder"));
  // A '..' component, even one that comes back in.
  WriteText(idx, R"({"weight_map": {"t.0": "../model-00001-of-00003.safetensors")" + rest);
  EXPECT_TRUE(Refused(idx, idx, "names '../model-00001-of-00003.safetensors', outside"));
  WriteText(idx, R"({"weight_map": {"t.0": "x/../model-00001-of-00003.safetensors")" + rest);
  EXPECT_TRUE(Refused(idx, idx, "(a '..' component)"));
  // A link that leads out.
  std::filesystem::create_symlink("../" + Shard(0), sub + "/out.safetensors");
  WriteText(idx, R"({"weight_map": {"t.0": "out.safetensors")" + rest);
  EXPECT_TRUE(Refused(idx, idx, "names 'out.safetensors', outside the index's folder (a link to"));
  std::filesystem::create_directory(sub + "/d");
  std::filesystem::create_directory_symlink(dir_.path(), sub + "/d/up");
  WriteText(idx, R"({"weight_map": {"t.0": "d/up/model-00001-of-00003.safetensors")" + rest);
  EXPECT_TRUE(Refused(idx, idx, "outside the index's folder"));
  // A name from the file is printed escaped, on one line.
  WriteText(idx, R"({"weight_map": {"t.0": "/a\nb")" + rest);
  EXPECT_TRUE(Refused(idx, idx, "names '/a\\nb', outside"));
  // The good index beside it reads.
  WriteText(idx, GoodIndex());
  TensorTable m;
  EXPECT_TRUE(ReadModel(idx, &m).ok());
}

TEST_F(ModelIndexTest, AShardThatIsNoRegularFileIsRefusedWithoutBlocking) {
  WriteShards();
  const std::string idx = Index(GoodIndex());
  const std::string fifo = dir_.File(Shard(1));
  std::filesystem::remove(fifo);
  test::MakeFifo(fifo);
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  EXPECT_TRUE(test::ReturnsWithin(test::kBlockedOnFifo, fifo, [&] {
    r = Refused(idx, fifo, "a FIFO (named pipe), not a regular file");
  })) << "reading the index blocked on a FIFO shard";
  EXPECT_TRUE(r);
  // The folder that holds the index reads it, and refuses the same.
  EXPECT_TRUE(test::ReturnsWithin(test::kBlockedOnFifo, fifo, [&] {
    r = Refused(dir_.path(), fifo, "a FIFO (named pipe), not a regular file");
  })) << "reading the folder blocked on a FIFO shard";
  EXPECT_TRUE(r);
  std::filesystem::remove(fifo);
  test::MakeSocketFile(fifo);
  EXPECT_TRUE(Refused(idx, fifo, "a socket, not a regular file"));
}

TEST_F(ModelIndexTest, AMissingShardIsRefused) {
  WriteShards();
  std::filesystem::remove(dir_.File(Shard(2)));
  EXPECT_TRUE(Refused(Index(GoodIndex()), dir_.File(Shard(2)), "missing"));
}

TEST_F(ModelIndexTest, ATensorItsShardLacksIsRefused) {
  WriteShards();
  // t.9 is in no shard.
  const std::string text = R"({"metadata": {},
    "weight_map": {"t.0": "model-00001-of-00003.safetensors",
    "t.1": "model-00001-of-00003.safetensors", "t.2": "model-00002-of-00003.safetensors",
    "t.3": "model-00003-of-00003.safetensors", "t.4": "model-00003-of-00003.safetensors",
    "t.5": "model-00003-of-00003.safetensors", "t.9": "model-00002-of-00003.safetensors"}})";
  EXPECT_TRUE(Refused(Index(text), dir_.File(Shard(1)), "lacks tensor 't.9', which the index"));
  // t.2 placed in the first shard, which lacks it: the shard holding it is at fault.
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": "model-00001-of-00003.safetensors",
    "t.1": "model-00001-of-00003.safetensors", "t.2": "model-00001-of-00003.safetensors",
    "t.3": "model-00003-of-00003.safetensors", "t.4": "model-00003-of-00003.safetensors",
    "t.5": "model-00003-of-00003.safetensors"}})"),
                      dir_.File(Shard(0)), "lacks tensor 't.2'"));
}

TEST_F(ModelIndexTest, ATensorInTheWrongShardIsRefused) {
  WriteShards();
  // Every shard is named, but t.3 is placed in the second one; the third holds it.
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": "model-00001-of-00003.safetensors",
    "t.1": "model-00001-of-00003.safetensors", "t.2": "model-00002-of-00003.safetensors",
    "t.3": "model-00002-of-00003.safetensors", "t.4": "model-00003-of-00003.safetensors",
    "t.5": "model-00003-of-00003.safetensors"}})"),
                      dir_.File(Shard(2)),
                      "holds tensor 't.3', which the index " + index_ +
                          " places in 'model-00002-of-00003.safetensors'"));
}

TEST_F(ModelIndexTest, ATensorInTwoShardsIsRefused) {
  WriteShards();
  WriteSafetensors(dir_.File("dup.safetensors"), 1, 3);  // t.1 and t.2 again
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": "model-00001-of-00003.safetensors",
    "t.1": "dup.safetensors", "t.2": "model-00002-of-00003.safetensors",
    "t.3": "model-00003-of-00003.safetensors", "t.4": "model-00003-of-00003.safetensors",
    "t.5": "model-00003-of-00003.safetensors"}})"),
                      dir_.File(Shard(0)),
                      "tensor 't.1' is also in " + dir_.File("dup.safetensors") +
                          ": a tensor in two shards"));
}

TEST_F(ModelIndexTest, AShardHoldingAnUnlistedTensorIsRefused) {
  WriteShards();
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": "model-00001-of-00003.safetensors",
    "t.1": "model-00001-of-00003.safetensors", "t.2": "model-00002-of-00003.safetensors",
    "t.3": "model-00003-of-00003.safetensors", "t.5": "model-00003-of-00003.safetensors"}})"),
                      dir_.File(Shard(2)),
                      "holds tensor 't.4', which the index " + index_ + " does not list"));
}

TEST_F(ModelIndexTest, MetadataMustAgree) {
  WriteShards();
  EXPECT_TRUE(Refused(Index(Replace(GoodIndex(), "\"total_size\": 184", "\"total_size\": 185")),
                      index_,
                      "metadata.total_size says 185 bytes, but the 3 shards' 6 tensors "
                      "hold 184"));
  EXPECT_TRUE(Refused(Index(Replace(GoodIndex(), "\"total_size\": 184", "\"total_size\": \"184\"")),
                      index_, "metadata.total_size is \"184\", not a number"));
  EXPECT_TRUE(Refused(Index(Replace(GoodIndex(), Hex(Checksum(0, 6)), "ABCDEF0123456789")), index_,
                      "not a string of 16 lower-case hex digits"));
  EXPECT_TRUE(Refused(Index(Replace(GoodIndex(), "\"format\": \"pt\"}", "\"format\": \"pt\"} ,")),
                      index_, "not valid JSON"));
  EXPECT_TRUE(Refused(Index(R"({"metadata": [1], "weight_map": {"t.0": "x"}})"), index_,
                      "\"metadata\" is a JSON array, not an object"));
  // total_size as a float, as some writers give it, is compared by value.
  TensorTable m;
  const Status s =
      ReadModel(Index(Replace(GoodIndex(), "\"total_size\": 184", "\"total_size\": 184.0")), &m);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST_F(ModelIndexTest, MalformedIndexesAreRefused) {
  WriteShards();
  EXPECT_TRUE(Refused(Index("{\"weight_map\": {\"t.0\": "), index_, "not valid JSON"));
  EXPECT_TRUE(Refused(Index("{ weight_map: {} }"), index_, "not valid JSON: syntax error at byte"));
  EXPECT_TRUE(Refused(Index(R"({"metadata": {"total_size": 184}})"), index_,
                      "an index without \"weight_map\""));
  EXPECT_TRUE(Refused(Index(R"({"weight_map": ["model-00001-of-00003.safetensors"]})"), index_,
                      "\"weight_map\" is a JSON array, not an object"));
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": 1}})"), index_,
                      "maps tensor 't.0' to a JSON number, not a file name"));
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": null}})"), index_, "JSON null"));
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {}})"), index_, "\"weight_map\" is empty"));
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": ""}})"), index_, "an empty file name"));
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": "model-00001-of-00003.safetensors",
      "t.0": "model-00002-of-00003.safetensors"}})"),
                      index_, "key 't.0' appears twice"));
  // A shard that is not a weight file, and shards of two formats.
  WriteText(dir_.File("notes.txt"), "hello there, this is no weight file");
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": "notes.txt"}})"), dir_.File("notes.txt"),
                      "unknown format"));
  test::WriteWlfFile(dir_.File("a.wlf"), {kTensors[0], kTensors[1]});
  EXPECT_TRUE(Refused(Index(Replace(GoodIndex(), "model-00001-of-00003.safetensors", "a.wlf")),
                      dir_.File(Shard(1)), "a safetensors file among shards that are wlf"));
  // A folder named as a shard.
  std::filesystem::create_directory(dir_.File("d"));
  EXPECT_TRUE(Refused(Index(R"({"weight_map": {"t.0": "d"}})"), dir_.File("d"), ""));
}

// ---- A folder ----

class ModelFolderTest : public ModelFixture {};

TEST_F(ModelFolderTest, AFolderWithOneIndexReadsIt) {
  WriteShards();
  Index(GoodIndex());
  TensorTable m;
  const Status s = ReadModel(dir_.path(), &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.layout, "index");
  EXPECT_EQ(m.shards.size(), 3u);
  EXPECT_EQ(m.header["index"], index_);
  EXPECT_EQ(m.expected_checksum, Checksum(0, 6));
  EXPECT_EQ(m.shards[2].path, dir_.File(Shard(2)));
  // With a trailing slash too; a folder named *.index.json is no index.
  std::filesystem::create_directory(dir_.File("x.index.json"));
  ASSERT_TRUE(ReadModel(dir_.path() + "/", &m).ok());
  EXPECT_EQ(m.tensors.size(), 6u);
}

TEST_F(ModelFolderTest, NoIndexOrSeveralAreRefused) {
  WriteShards();
  EXPECT_TRUE(Refused(dir_.path(), dir_.path(), "holding no *.index.json file"));
  Index(GoodIndex());
  WriteText(dir_.File("other.index.json"), GoodIndex());
  EXPECT_TRUE(Refused(dir_.path(), dir_.path(),
                      "holding 2 *.index.json files (model.safetensors.index.json, "
                      "other.index.json)"));
  // The folder's one index is an index: a weight file named so is refused as not JSON.
  std::filesystem::remove(dir_.File("other.index.json"));
  std::filesystem::remove(index_);
  std::filesystem::copy_file(dir_.File(Shard(0)), dir_.File("w.index.json"));
  EXPECT_TRUE(Refused(dir_.path(), dir_.File("w.index.json"), "not valid JSON"));
}

// ---- A GGUF split ----

class ModelGgufSplitTest : public ModelFixture {
 protected:
  std::string Split(size_t k, size_t n = 3) const {
    return dir_.File(ShardFileName("m", k, n, "gguf"));
  }
  // Split k of 3 holding tensors [kBounds[k], kBounds[k + 1]), with `kvs` (by default
  // gguf-split's keys); the first carries the model's checksum and other metadata.
  void WriteSplit(size_t k, std::vector<GgufKv> kvs = {}) const {
    if (kvs.empty()) kvs = SplitKvs(k, 3, 6);
    if (k == 0) {
      kvs.push_back(GgufString("general.architecture", "llama"));
      kvs.push_back(GgufString("loadbench.model_xxh3_64", Hex(Checksum(0, 6))));
    }
    kvs.push_back(GgufString(kGgufChecksumKey, Hex(Checksum(kBounds[k], kBounds[k + 1]))));
    WriteGguf(Split(k), kBounds[k], kBounds[k + 1], kvs);
  }
  void WriteSplits() const {
    for (size_t k = 0; k < 3; ++k) WriteSplit(k);
  }
};

TEST_F(ModelGgufSplitTest, ThreeSplitsReadInOrder) {
  WriteSplits();
  TensorTable one;
  ASSERT_TRUE(ReadTensorTableFromPath(Split(1), &one).ok());
  EXPECT_EQ(one.header["split"],
            (nlohmann::ordered_json{{"no", 1}, {"count", 3}, {"tensors_count", 6}}));
  EXPECT_FALSE(one.header.contains("model_checksum"));

  TensorTable m;
  const Status s = ReadModel(Split(0), &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.format, "gguf");
  EXPECT_EQ(m.layout, "gguf-split");
  ASSERT_EQ(m.shards.size(), 3u);
  ASSERT_EQ(m.tensors.size(), 6u);
  uint64_t file_size = 0;
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    TensorTable own;
    ASSERT_TRUE(ReadTensorTableFromPath(Split(k), &own).ok());
    EXPECT_EQ(m.shards[k].path, Split(k));
    EXPECT_EQ(m.shards[k].first_tensor, kBounds[k]);
    EXPECT_EQ(m.shards[k].expected_checksum, Checksum(kBounds[k], kBounds[k + 1]));
    for (size_t i = kBounds[k]; i < kBounds[k + 1]; ++i) {
      EXPECT_EQ(m.tensors[i].name, kTensors[i].name);
      EXPECT_EQ(m.tensors[i].shard, k);
      EXPECT_EQ(m.tensors[i].offset, own.tensors[i - kBounds[k]].offset);
    }
    file_size += own.file_size;
  }
  EXPECT_EQ(m.file_size, file_size);
  EXPECT_EQ(m.tensor_bytes, kTotalBytes);
  EXPECT_EQ(m.expected_checksum, Checksum(0, 6));
  EXPECT_EQ(ModelChecksum(m), Checksum(0, 6));
  EXPECT_EQ(m.header["split_count"], 3u);
  EXPECT_EQ(m.header["shard_header"]["model_checksum"], Hex(Checksum(0, 6)));
  EXPECT_EQ(m.header["shard_header"]["metadata"]["general.architecture"], "llama");
}

TEST_F(ModelGgufSplitTest, SplitKeysOfAnyIntegerType) {
  WriteSplit(0, {Int("split.no", test::kGgufU32, 0), Int("split.count", test::kGgufI64, 3),
                 Int("split.tensors.count", test::kGgufU64, 6)});
  WriteSplit(1, {Int("split.no", test::kGgufU8, 1), Int("split.count", test::kGgufI16, 3),
                 Int("split.tensors.count", test::kGgufI32, 6)});
  WriteSplit(2);
  TensorTable m;
  const Status s = ReadModel(Split(0), &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.shards.size(), 3u);
  // A split key of another type is refused by the GGUF reader.
  WriteGguf(Split(1), kBounds[1], kBounds[2],
            {Int("split.no", test::kGgufU16, 1), GgufString("split.count", "3")});
  EXPECT_TRUE(
      Refused(Split(0), Split(1), "key 'split.count' has type string; it must be an integer"));
}

TEST_F(ModelGgufSplitTest, DisagreeingSplitsAreRefused) {
  WriteSplits();
  EXPECT_TRUE(
      Refused(Split(1), Split(1), "is split 2 of 3; give the first (m-00001-of-00003.gguf)"));
  // split.count
  WriteSplit(1, SplitKvs(1, 4, 6));
  EXPECT_TRUE(Refused(Split(0), Split(1), "split.count is 4, but the first split"));
  // numbering
  WriteSplit(1);
  WriteSplit(2, SplitKvs(1, 3, 6));
  EXPECT_TRUE(Refused(Split(0), Split(2), "split.no is 1, but its name makes it split.no 2"));
  // tensor counts: one split disagrees, or all agree on a wrong count
  WriteSplit(2, SplitKvs(2, 3, 5));
  EXPECT_TRUE(Refused(Split(0), Split(2), "split.tensors.count is 5, but the first split"));
  for (size_t k = 0; k < 3; ++k) WriteSplit(k, SplitKvs(k, 3, 7));
  EXPECT_TRUE(
      Refused(Split(0), Split(0), "split.tensors.count says 7 tensors, but the 3 splits hold 6"));
  // a missing split
  WriteSplits();
  std::filesystem::remove(Split(2));
  EXPECT_TRUE(Refused(Split(0), Split(2), "missing: split 3 of 3 of " + Split(0)));
  // a split that is no GGUF file
  WriteSafetensors(Split(2), kBounds[2], kBounds[3]);
  EXPECT_TRUE(Refused(Split(0), Split(2), "a safetensors file, not split 3 of 3"));
  // a tensor in two splits (and counts that add up)
  WriteSplits();
  WriteGguf(Split(2), 2, 6, SplitKvs(2, 3, 7));
  for (size_t k = 0; k < 2; ++k) WriteSplit(k, SplitKvs(k, 3, 7));
  EXPECT_TRUE(Refused(Split(0), Split(2), "tensor 't.2' is also in " + Split(1)));
}

// The siblings are confined to the first split's folder as an index's shards are to its.
TEST_F(ModelGgufSplitTest, ASiblingLinkedOutsideTheFolderIsRefused) {
  WriteSplits();  // in the temp dir, outside sub/
  const std::string sub = dir_.File("sub");
  std::filesystem::create_directory(sub);
  const std::string first = sub + "/" + ShardFileName("m", 0, 3, "gguf");
  const std::string second = sub + "/" + ShardFileName("m", 1, 3, "gguf");
  const std::string third = sub + "/" + ShardFileName("m", 2, 3, "gguf");
  std::filesystem::copy_file(Split(0), first);
  std::filesystem::copy_file(Split(2), third);
  // A relative link that leads out, and an absolute one.
  std::filesystem::create_symlink("../" + ShardFileName("m", 1, 3, "gguf"), second);
  EXPECT_TRUE(Refused(first, second,
                      "split 2 of 3 of " + first + " is outside its folder (a link to " +
                          std::filesystem::canonical(Split(1)).string() + ")"));
  std::filesystem::remove(second);
  std::filesystem::create_symlink(Split(1), second);
  EXPECT_TRUE(Refused(first, second, "is outside its folder (a link to"));
  // A link through a folder that leads out.
  std::filesystem::remove(second);
  std::filesystem::create_directory_symlink(dir_.path(), sub + "/up");
  std::filesystem::create_symlink("up/" + ShardFileName("m", 1, 3, "gguf"), second);
  EXPECT_TRUE(Refused(first, second, "is outside its folder (a link to"));
  // A link that stays inside the folder is followed.
  std::filesystem::remove(second);
  std::filesystem::copy_file(Split(1), sub + "/alias.gguf");
  std::filesystem::create_symlink("alias.gguf", second);
  TensorTable m;
  const Status s = ReadModel(first, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.shards.size(), 3u);
  EXPECT_EQ(m.shards[1].path, second);
}

TEST_F(ModelGgufSplitTest, ASiblingThatIsAFifoIsRefusedWithoutBlocking) {
  WriteSplits();
  std::filesystem::remove(Split(2));
  test::MakeFifo(Split(2));
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  EXPECT_TRUE(test::ReturnsWithin(test::kBlockedOnFifo, Split(2), [&] {
    r = Refused(Split(0), Split(2), "a FIFO (named pipe), not a regular file");
  })) << "reading the split blocked on a FIFO sibling";
  EXPECT_TRUE(r);
}

TEST_F(ModelGgufSplitTest, TheFirstSplitMustBeNamedSo) {
  WriteSplits();
  const std::string odd = dir_.File("m.gguf");
  std::filesystem::copy_file(Split(0), odd);
  EXPECT_TRUE(Refused(odd, odd, "must be named NAME-00001-of-00003.gguf"));
  const std::string wrong_n = dir_.File("m-00001-of-00004.gguf");
  std::filesystem::copy_file(Split(0), wrong_n);
  EXPECT_TRUE(Refused(wrong_n, wrong_n, "must be named NAME-00001-of-00003.gguf"));
}

// ---- The model's checksum ----

class ModelChecksumTest : public ModelFixture {};

// Over the tensors' bytes in table order: the same for the model sharded as for one file.
TEST_F(ModelChecksumTest, ShardedEqualsUnsharded) {
  WriteShards();
  const std::string single = dir_.File("single.safetensors");
  WriteSafetensors(single, 0, 6);
  const std::string wlf = dir_.File("single.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(wlf, kTensors, 4096, kSeed);

  TensorTable sharded, one;
  const Status s = ReadModel(Index(GoodIndex()), &sharded);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(ReadModel(single, &one).ok());
  const uint64_t expected = Checksum(0, 6);
  uint64_t file_sum = 0;
  {
    UniqueFd fd;
    ASSERT_TRUE(OpenReadOnly(single, 0, &fd).ok());
    ASSERT_TRUE(ChecksumFile(FileSource(fd.get(), single, std::filesystem::file_size(single)), one,
                             &file_sum)
                    .ok());
  }
  EXPECT_EQ(file_sum, expected);
  EXPECT_EQ(ModelChecksum(one), expected);
  EXPECT_EQ(ModelChecksum(sharded), expected);
  EXPECT_EQ(sharded.expected_checksum, expected);
  EXPECT_EQ(w.checksum, expected);  // WLF's stored checksum is the same number
}

}  // namespace
}  // namespace loadbench
