// The pool strategy loads one file and a model of three shards byte for byte under every option
// that changes how its queue is cut and walked (threads, chunk, order, split, direct), says how
// many threads, chunks and files per thread it used, and names the file at fault in its errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/format/model.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "tests/support/model_loads.h"
#include "tests/support/scoped_mount.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using test::Detail;
using test::ExpectExact;
using test::Generated;
using test::GeneratedFiles;
using test::JoinFiles;
using test::Loaded;
using test::LoadTable;
using test::Unsupported;

// The chunks a load of `table` reads: each shard's 4 KiB-aligned span cut into chunks.
uint64_t ExpectedChunks(const TensorTable& table, uint64_t chunk) {
  uint64_t n = 0;
  for (size_t k = 0; k < table.shards.size(); ++k) {
    n += (TensorSpan(ShardTable(table, k), 4096).size() + chunk - 1) / chunk;
  }
  return n;
}

class PoolTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PoolTest, LoadsOneFileAndAThreeShardModelExactly) {
  const GeneratedFiles& f = Generated();
  for (const std::string& path : f.singles) {
    TensorTable table;
    ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
    ASSERT_TRUE(table.expected_checksum.has_value());
    Loaded l;
    const Status s = LoadTable(GetParam(), path, table, &l);
    if (Unsupported(s)) GTEST_SKIP() << s.message();
    ASSERT_TRUE(s.ok()) << s.message();
    ExpectExact(table, l, GetParam() + " on " + path);
    EXPECT_EQ(Detail(l, "chunks"), ExpectedChunks(table, l.params.Bytes("chunk"))) << path;
  }
  ASSERT_EQ(f.model.shards.size(), 3u);
  Loaded l;
  const Status s = LoadTable(GetParam(), f.dir.File("model.index.json"), f.model, &l);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectExact(f.model, l, GetParam() + " on the model");
  EXPECT_EQ(Detail(l, "chunks"), ExpectedChunks(f.model, l.params.Bytes("chunk")))
      << l.loader->Details().dump();
}

// 5000-byte and 12 KiB chunks cut the 22016- and 65536-byte tensors mid-chunk; one thread and
// four walk the queue alone and together; interleave puts every shard in flight at once;
// split=files gives each thread whole shards; direct=on reads the aligned spans with O_DIRECT.
INSTANTIATE_TEST_SUITE_P(
    Pool, PoolTest,
    ::testing::Values("pool", "pool:threads=1", "pool:threads=4:chunk=5000",
                      "pool:threads=1:chunk=5000:order=interleave",
                      "pool:threads=4:chunk=4KiB:order=interleave", "pool:split=files",
                      "pool:split=files:threads=2:chunk=5000", "pool:split=files:threads=1",
                      "pool:direct=on", "pool:direct=on:threads=4:chunk=12KiB",
                      "pool:direct=on:threads=1:chunk=4KiB:order=interleave",
                      "pool:direct=on:split=files:threads=2:chunk=8KiB", "pool:buffer=thp"),
    [](const auto& info) {
      std::string n = info.param;
      for (char& c : n) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

TEST(PoolDetails, SayThreadsChunksAndFilesPerThread) {
  const TensorTable& model = Generated().model;
  const std::string index = Generated().dir.File("model.index.json");
  struct Case {
    const char* spec;
    uint64_t threads, files_per_thread;
  };
  for (const Case& c : {Case{"pool:threads=1:chunk=64KiB", 1, 3},
                        Case{"pool:threads=1:chunk=64KiB:order=interleave", 1, 3},
                        Case{"pool:split=files:threads=2", 2, 2}, Case{"pool:split=files", 3, 1},
                        Case{"pool:split=files:threads=3:chunk=4KiB", 3, 1}}) {
    Loaded l;
    ASSERT_TRUE(LoadTable(c.spec, index, model, &l).ok()) << c.spec;
    EXPECT_EQ(Detail(l, "threads"), c.threads) << c.spec;
    EXPECT_EQ(Detail(l, "files_per_thread"), c.files_per_thread) << c.spec;
    EXPECT_EQ(Detail(l, "chunks"), ExpectedChunks(model, l.params.Bytes("chunk"))) << c.spec;
  }
  // More threads than chunks: only as many start as there are chunks.
  Loaded l;
  ASSERT_TRUE(LoadTable("pool:threads=1000", index, model, &l).ok());
  EXPECT_EQ(Detail(l, "threads"), ExpectedChunks(model, 2 << 20));
}

// Shards of odd tensors (an empty one, a 1-element one, odd byte counts) at 64-byte alignment.
TEST(PoolModel, LoadsShardsOfOddTensors) {
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 64, &paths);
  for (const char* spec : {"pool:threads=4:chunk=3", "pool:split=files:chunk=7",
                           "pool:direct=on:chunk=4KiB:order=interleave"}) {
    Loaded l;
    const Status s = LoadTable(spec, dir.File("odd.wlf.index.json"), model, &l);
    if (Unsupported(s)) continue;
    ASSERT_TRUE(s.ok()) << spec << ": " << s.message();
    ExpectExact(model, l, spec);
  }
}

TEST(PoolErrors, AMissingShardIsBadInputNamingIt) {
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 4096, &paths);
  ASSERT_EQ(::unlink(paths[1].c_str()), 0);
  for (const char* spec : {"pool", "pool:split=files", "pool:direct=on"}) {
    Loaded l;
    const Status s = LoadTable(spec, dir.File("odd.wlf.index.json"), model, &l);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << spec << ": " << s.message();
    EXPECT_NE(s.message().find(paths[1]), std::string::npos) << s.message();
  }
}

// A shard cut short after its table was read: the thread that meets its end reports it, the
// others stop, and the error names that shard.
TEST(PoolErrors, ATruncatedShardIsBadInputNamingIt) {
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 4096, &paths);
  const uint64_t size = model.shards[2].file_size;
  ASSERT_EQ(::truncate(paths[2].c_str(), static_cast<off_t>(size / 2)), 0);
  for (const char* spec : {"pool:threads=4:chunk=4KiB", "pool:split=files:threads=3",
                           "pool:direct=on:threads=4:chunk=4KiB"}) {
    Loaded l;
    const Status s = LoadTable(spec, dir.File("odd.wlf.index.json"), model, &l);
    if (Unsupported(s)) continue;
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << spec << ": " << s.message();
    EXPECT_NE(s.message().find(paths[2]), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  }
}

// O_DIRECT reads whole aligned blocks: a chunk that is not a multiple of 4096 is refused, not
// rounded, since the results would record a chunk that was not the one used.
TEST(PoolErrors, DirectRefusesAChunkThatIsNotAMultipleOfAPage) {
  const std::string& path = Generated().singles[0];
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  Loaded l;
  const Status s = LoadTable("pool:direct=on:chunk=5000", path, table, &l);
  if (Unsupported(s)) GTEST_SKIP() << s.message();
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

// ramfs has no direct I/O: direct=on is unsupported there, naming the file; buffered reads work.
TEST(PoolErrors, AFilesystemWithoutODirectIsUnsupportedForDirectOnly) {
  test::ScopedMount ramfs("ramfs");
  if (!ramfs.ok()) GTEST_SKIP() << ramfs.why();
  const std::string path = ramfs.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  Loaded direct;
  Status s = LoadTable("pool:direct=on", path, table, &direct);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  Loaded buffered;
  s = LoadTable("pool", path, table, &buffered);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ChecksumTensors(buffered.views), w.checksum);
}

}  // namespace
}  // namespace loadbench
