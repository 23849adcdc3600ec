// The owned strategy loads one file and a model of three shards byte for byte under every
// option that changes how its destination is populated and read (populate, faulters, block,
// threads, chunk, fit, direct, buffer, lock), says how it did in its details, and names the file
// at fault in its errors.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "loaders/base/file_io.h"
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

class OwnedTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OwnedTest, LoadsOneFileAndAThreeShardModelExactly) {
  const GeneratedFiles& f = Generated();
  for (const std::string& path : f.singles) {
    TensorTable table;
    ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
    Loaded l;
    const Status s = LoadTable(GetParam(), path, table, &l);
    if (Unsupported(s)) GTEST_SKIP() << s.message();
    ASSERT_TRUE(s.ok()) << s.message();
    ExpectExact(table, l, GetParam() + " on " + path);
  }
  Loaded l;
  const Status s = LoadTable(GetParam(), f.dir.File("model.index.json"), f.model, &l);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectExact(f.model, l, GetParam() + " on the model");
  const std::string direct = l.params.Choice("direct");
  if (direct != "auto") {
    EXPECT_EQ(Detail(l, "direct_files"), direct == "on" ? 3u : 0u);
  }
}

// 4 KiB blocks populate a region of several blocks, each waited for by the read that lands in
// it; several faulters finish blocks out of order; before and none take the other two paths.
INSTANTIATE_TEST_SUITE_P(
    Owned, OwnedTest,
    ::testing::Values("owned", "owned:threads=1:chunk=4KiB:block=4KiB",
                      "owned:threads=4:chunk=8KiB:block=4KiB:faulters=3",
                      "owned:populate=before:block=12KiB", "owned:populate=none:threads=2",
                      "owned:direct=off:chunk=4KiB", "owned:direct=on:buffer=malloc",
                      "owned:direct=on:fit=off:chunk=12KiB:threads=3", "owned:lock=on:block=4KiB",
                      "owned:handout=end:threads=2"),
    [](const auto& info) {
      std::string n = info.param;
      for (char& c : n) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

TEST(OwnedDetails, SayHowTheDestinationWasPopulated) {
  const TensorTable& model = Generated().model;
  const std::string index = Generated().dir.File("model.index.json");
  Loaded ahead;
  ASSERT_TRUE(LoadTable("owned:block=4KiB:chunk=4KiB", index, model, &ahead).ok());
  const nlohmann::json d = ahead.loader->Details();
  EXPECT_EQ(d["populate"], "ahead");
  EXPECT_EQ(d["populate_method"], "madvise");  // every kernel this suite supports has it
  EXPECT_GT(d["populate_s"].get<double>(), 0.0);
  EXPECT_GE(d["populate_wait_s"].get<double>(), 0.0);
  EXPECT_EQ(d["locked"], false);
  Loaded none;
  ASSERT_TRUE(LoadTable("owned:populate=none", index, model, &none).ok());
  EXPECT_EQ(none.loader->Details()["populate_s"].get<double>(), 0.0);
  Loaded locked;
  const Status s = LoadTable("owned:lock=on", index, model, &locked);
  if (Unsupported(s)) GTEST_SKIP() << s.message();
  EXPECT_EQ(locked.loader->Details()["locked"], true);
}

// fit=device (the default) sizes O_DIRECT reads to the queue of the device the shards are on,
// where its limits are found: a chunk no larger than one request stays, a larger one becomes
// whole requests; details' `fit` says what it read and why. fit=off, and buffered reads, leave
// chunk and threads as given and say so.
TEST(OwnedDetails, SayHowTheReadsWereSizedToTheDevice) {
  const TensorTable& model = Generated().model;
  const std::string index = Generated().dir.File("model.index.json");
  Loaded fitted;
  const Status s = LoadTable("owned:direct=on", index, model, &fitted);
  if (Unsupported(s)) GTEST_SKIP() << s.message();
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectExact(model, fitted, "owned:direct=on");
  const nlohmann::json d = fitted.loader->Details();
  ASSERT_TRUE(d.contains("fit")) << d.dump();
  EXPECT_EQ(d["fit"]["mode"], "device");
  EXPECT_FALSE(d["fit"]["why"].get<std::string>().empty());
  const uint64_t chunk = d["chunk"];
  if (d["fit"].contains("request")) {  // the temporary folder is on a block device
    const uint64_t request = d["fit"]["request"];
    EXPECT_GT(d["fit"]["max_sectors_kb"].get<uint64_t>(), 0u);
    EXPECT_TRUE(chunk % request == 0 || (chunk == (4u << 20) && request >= chunk)) << d.dump();
  } else {
    EXPECT_EQ(chunk, 4u << 20) << d.dump();
  }
  Loaded off;
  ASSERT_TRUE(LoadTable("owned:direct=on:fit=off:chunk=8KiB", index, model, &off).ok());
  ExpectExact(model, off, "owned:fit=off");
  EXPECT_EQ(off.loader->Details()["fit"]["mode"], "off");
  EXPECT_EQ(off.loader->Details()["chunk"], 8192u);
  Loaded buffered;
  ASSERT_TRUE(LoadTable("owned:direct=off", index, model, &buffered).ok());
  EXPECT_EQ(buffered.loader->Details()["chunk"], 4u << 20);
  EXPECT_NE(buffered.loader->Details()["fit"]["why"].get<std::string>().find("no O_DIRECT"),
            std::string::npos);
}

// Shards of odd tensors (an empty one, a 1-element one, odd byte counts) at 64-byte alignment.
TEST(OwnedModel, LoadsShardsOfOddTensors) {
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 64, &paths);
  for (const char* spec : {"owned:threads=4:chunk=4KiB:block=4KiB", "owned:direct=off",
                           "owned:populate=before:faulters=2:block=4KiB"}) {
    Loaded l;
    const Status s = LoadTable(spec, dir.File("odd.wlf.index.json"), model, &l);
    ASSERT_TRUE(s.ok()) << spec << ": " << s.message();
    ExpectExact(model, l, spec);
  }
}

// direct=auto reads a file in the page cache through the cache (O_DIRECT would read the device
// again) and one that is not with O_DIRECT.
TEST(OwnedModel, AutoReadsCachedFilesBufferedAndOthersDirect) {
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 4096, &paths);
  const std::string index = dir.File("odd.wlf.index.json");
  for (const std::string& p : paths) {  // written just now: in the cache
    std::vector<std::byte> all(model.shards[0].file_size * 2);
    UniqueFd fd;
    ASSERT_TRUE(OpenReadOnly(p, 0, &fd).ok());
    while (::read(fd.get(), all.data(), all.size()) > 0) {
    }
  }
  Loaded cached;
  ASSERT_TRUE(LoadTable("owned", index, model, &cached).ok());
  EXPECT_EQ(Detail(cached, "direct_files"), 0u);
  ExpectExact(model, cached, "owned, cached");
  for (const std::string& p : paths) {  // out of the cache: clean pages, dropped
    UniqueFd fd;
    ASSERT_TRUE(OpenReadOnly(p, 0, &fd).ok());
    ::fdatasync(fd.get());
    ASSERT_EQ(::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED), 0);
  }
  Loaded cold;
  const Status s = LoadTable("owned", index, model, &cold);
  if (Unsupported(s)) GTEST_SKIP() << s.message();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Detail(cold, "direct_files"), 3u);
  ExpectExact(model, cold, "owned, not cached");
}

// hugetlb lands the model in reserved huge pages where there are enough, and is unsupported,
// naming the shortfall, where there are not.
TEST(OwnedModel, HugetlbLoadsOrSaysWhatIsMissing) {
  const TensorTable& model = Generated().model;
  Loaded l;
  const Status s =
      LoadTable("owned:buffer=hugetlb", Generated().dir.File("model.index.json"), model, &l);
  if (s.code() == Status::Code::kUnsupported) {
    EXPECT_NE(s.message().find("huge pages"), std::string::npos) << s.message();
    return;
  }
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectExact(model, l, "owned:buffer=hugetlb");
}

// A view handed out before its bytes arrived is waited for: tensor by tensor, every tensor of a
// model read in 4 KiB chunks by one thread is whole once Arrived says so.
TEST(OwnedModel, EachTensorIsWholeOnceArrivedSaysSo) {
  const TensorTable& model = Generated().model;
  std::vector<StrategySpec> specs;
  ASSERT_TRUE(ParseStrategyList("owned:threads=1:chunk=4KiB:block=4KiB", &specs).ok());
  const StrategyInfo* info = FindStrategy("owned");
  Params params;
  ASSERT_TRUE(Params::Resolve("owned", info->options, specs[0].options, &params).ok());
  std::unique_ptr<Loader> loader = info->make(params);
  std::vector<TensorBytes> views;
  ASSERT_TRUE(loader->Load(Generated().dir.File("model.index.json"), model, &views).ok());
  const auto reference = test::ReferenceTensors(model);
  ASSERT_EQ(views.size(), reference.size());
  for (size_t i = 0; i < views.size(); ++i) {
    ASSERT_TRUE(loader->Arrived(i).ok()) << i;
    ASSERT_EQ(views[i].size(), reference[i].size()) << i;
    if (reference[i].empty()) continue;
    EXPECT_EQ(std::memcmp(views[i].data(), reference[i].data(), reference[i].size()), 0) << i;
  }
  const nlohmann::json d = loader->Details();
  EXPECT_EQ(d["handout"], "arrival");
  // Each Arrived waited on the reads (loaders/blocks/tests/prefix_test.cc: the wait itself),
  // not handed the view over unchecked.
  EXPECT_GT(d["consumer_wait_s"].get<double>(), 0) << d.dump();
}

TEST(OwnedErrors, ATruncatedShardIsBadInputNamingIt) {
  test::TempDir dir;
  std::vector<std::string> paths;
  const TensorTable model = test::OddShards(dir, 4096, &paths);
  ASSERT_EQ(::truncate(paths[2].c_str(), static_cast<off_t>(model.shards[2].file_size / 2)), 0);
  Loaded l;
  const Status s =
      LoadTable("owned:threads=4:chunk=4KiB", dir.File("odd.wlf.index.json"), model, &l);
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
  EXPECT_NE(s.message().find(paths[2]), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
}

TEST(OwnedErrors, AChunkThatIsNotAMultipleOfAPageIsBadInput) {
  const std::string& path = Generated().singles[0];
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  Loaded l;
  const Status s = LoadTable("owned:chunk=5000", path, table, &l);
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

// ramfs has no direct I/O: direct=on is unsupported there, naming the file; direct=auto (the
// default) reads it buffered and says so.
TEST(OwnedErrors, AFilesystemWithoutODirectIsUnsupportedForDirectOnly) {
  test::ScopedMount ramfs("ramfs");
  if (!ramfs.ok()) GTEST_SKIP() << ramfs.why();
  const std::string path = ramfs.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  Loaded direct;
  Status s = LoadTable("owned:direct=on", path, table, &direct);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  Loaded automatic;
  s = LoadTable("owned", path, table, &automatic);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ChecksumTensors(automatic.views), w.checksum);
  EXPECT_EQ(Detail(automatic, "direct_files"), 0u);
}

}  // namespace
}  // namespace loadbench
