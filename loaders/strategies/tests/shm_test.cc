// The shm strategy: the first loader of a file creates its segment, later ones attach to it
// without reading the file, and a segment that is incomplete or of another version of the file
// is replaced, never served.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include "loaders/base/units.h"
#include "loaders/blocks/destination.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategies/shm.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/shard_by_shard.h"
#include "loaders/use/spec.h"
#include "tests/support/sharded_model.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

namespace bip = boost::interprocess;

struct Loaded {
  Status status;
  std::unique_ptr<Loader> loader;  // owns the mapping the views point into
  std::vector<TensorBytes> views;
  std::string role() const { return loader->Details().value("role", ""); }
  std::string segment() const { return loader->Details().value("segment", ""); }
};

Loaded LoadShm(const std::string& path, const std::map<std::string, std::string>& options = {}) {
  Loaded out;
  const StrategyInfo* info = FindStrategy("shm");
  Params params;
  out.status = Params::Resolve("shm", info->options, options, &params);
  TensorTable table;
  if (out.status.ok()) out.status = ReadTensorTableFromPath(path, &table);
  out.loader = info->make(params);
  if (out.status.ok()) out.status = out.loader->Load(path, table, &out.views);
  return out;
}

std::string SegmentOf(const std::string& path) {
  std::string name;
  Status s = ShmSegmentName(path, &name);
  EXPECT_TRUE(s.ok()) << s.message();
  return name;
}

bool DevShmHas(const std::string& segment) {
  struct stat st {};
  return ::stat(("/dev/shm/" + segment).c_str(), &st) == 0;
}

// Removes the file's segment before the test (one a crashed earlier run left) and after it,
// however it ends. Declare it after the TempDir: it needs the file to find the segment.
class SegmentCleanup final {
 public:
  explicit SegmentCleanup(std::string path) : path_(std::move(path)) {
    (void)RemoveShmSegment(path_);
  }
  ~SegmentCleanup() { (void)RemoveShmSegment(path_); }
  SegmentCleanup(const SegmentCleanup&) = delete;
  SegmentCleanup& operator=(const SegmentCleanup&) = delete;

 private:
  std::string path_;
};

// Every tensor byte for byte, and the checksum the file was written with.
void ExpectTensors(const Loaded& loaded, const test::WrittenWlf& w, uint64_t seed) {
  ASSERT_EQ(loaded.views.size(), w.layout.tensor_sizes.size());
  for (size_t i = 0; i < loaded.views.size(); ++i) {
    const auto expected = test::TensorData(seed, i, w.layout.tensor_sizes[i]);
    ASSERT_EQ(loaded.views[i].size(), expected.size()) << "tensor " << i;
    if (expected.empty()) continue;  // memcmp may not be given the null data() of nothing
    EXPECT_EQ(std::memcmp(loaded.views[i].data(), expected.data(), expected.size()), 0)
        << "tensor " << i << " differs";
  }
  EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum);
}

// rchar of /proc/self/io: bytes this process got from read-like system calls, whether they
// came from storage or from the page cache.
uint64_t ReadChars() {
  std::ifstream in("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "rchar:") return value;
  }
  ADD_FAILURE() << "/proc/self/io has no rchar";
  return 0;
}

int64_t MtimeNs(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

void SetMtimeNs(const std::string& path, int64_t ns) {
  const timespec times[2] = {{0, UTIME_OMIT}, {ns / 1'000'000'000, ns % 1'000'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

// Rewrites `path` in place (same inode, so the same segment name) with the file that `seed`
// and `tensors` make.
test::WrittenWlf RewriteInPlace(const test::TempDir& dir, const std::string& path,
                                const std::vector<WlfTensorSpec>& tensors, uint64_t seed) {
  const std::string other = dir.File("other.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(other, tensors, 4096, seed);
  test::WriteFileBytes(path, test::ReadFileBytes(other));
  ::unlink(other.c_str());
  return w;
}

TEST(ShmStrategy, TheFirstLoaderCreatesAndALaterOneAttaches) {
  test::TempDir dir;
  const auto tensors = test::OddTensors();
  for (uint64_t align : {64u, 4096u}) {
    SCOPED_TRACE("align " + std::to_string(align));
    const std::string path = dir.File("odd" + std::to_string(align) + ".wlf");
    const test::WrittenWlf w = test::WriteWlfFile(path, tensors, align, /*seed=*/align);
    SegmentCleanup cleanup(path);
    const std::string segment = SegmentOf(path);
    ASSERT_FALSE(DevShmHas(segment));

    Loaded first = LoadShm(path);
    ASSERT_TRUE(first.status.ok()) << first.status.message();
    EXPECT_EQ(first.role(), "creator");
    EXPECT_EQ(first.segment(), segment);
    EXPECT_TRUE(DevShmHas(segment));
    ExpectTensors(first, w, align);
    first = Loaded();  // the segment outlives the process that made it

    Loaded second = LoadShm(path);
    ASSERT_TRUE(second.status.ok()) << second.status.message();
    EXPECT_EQ(second.role(), "attacher");
    EXPECT_EQ(second.segment(), segment);
    ExpectTensors(second, w, align);
    // The segment keeps the alignment the tensors have in the file.
    for (const TensorBytes& v : second.views) {
      if (!v.empty()) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % align, 0u);
      }
    }
  }
}

// The attach is measured by rchar, which counts bytes from the page cache too (read_bytes
// counts only storage, so it is 0 for a cached file whoever reads it). The creator's load is
// the control: it shows that the measure sees a load that reads the file.
TEST(ShmStrategy, AnAttacherReadsNothingFromTheFile) {
  test::TempDir dir;
  const std::string path = dir.File("big.wlf");
  const test::WrittenWlf w =
      test::WriteWlfFile(path, {{"t", WlfDType::kU8, {1u << 20}}}, 4096, /*seed=*/3);
  SegmentCleanup cleanup(path);

  const uint64_t before_create = ReadChars();
  Loaded creator = LoadShm(path);
  const uint64_t after_create = ReadChars();
  ASSERT_TRUE(creator.status.ok()) << creator.status.message();
  ASSERT_EQ(creator.role(), "creator");
  EXPECT_GE(after_create - before_create, 1u << 20);

  // Only the table is read here, outside the measured span.
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  Params params;
  ASSERT_TRUE(Params::Resolve("shm", FindStrategy("shm")->options, {}, &params).ok());
  std::unique_ptr<Loader> attacher = FindStrategy("shm")->make(params);
  std::vector<TensorBytes> views;
  const uint64_t before_attach = ReadChars();
  Status s = attacher->Load(path, table, &views);
  const uint64_t after_attach = ReadChars();
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(attacher->Details().value("role", ""), "attacher");
  // The only read between the two samples is the first sample's own read of /proc/self/io,
  // about a hundred bytes.
  EXPECT_LT(after_attach - before_attach, 4096u);
  EXPECT_EQ(ChecksumTensors(views), w.checksum);
}

// The file is still there to be opened and stat'ed (that is how the attacher knows which
// version the segment must hold), but its tensor bytes are replaced while its identity (inode,
// size, mtime) is kept: the attacher serves the bytes the creator read, so they came from the
// segment, by any path, not only by read().
TEST(ShmStrategy, AnAttacherServesTheSegmentNotTheFile) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  const auto tensors = test::OddTensors();
  const test::WrittenWlf w1 = test::WriteWlfFile(path, tensors, 4096, /*seed=*/1);
  SegmentCleanup cleanup(path);
  Loaded creator = LoadShm(path);
  ASSERT_TRUE(creator.status.ok()) << creator.status.message();
  ASSERT_EQ(creator.role(), "creator");

  const int64_t mtime = MtimeNs(path);
  const test::WrittenWlf w2 = RewriteInPlace(dir, path, tensors, /*seed=*/2);
  ASSERT_NE(w1.checksum, w2.checksum);
  SetMtimeNs(path, mtime);

  Loaded attacher = LoadShm(path);
  ASSERT_TRUE(attacher.status.ok()) << attacher.status.message();
  EXPECT_EQ(attacher.role(), "attacher");
  ExpectTensors(attacher, w1, 1);
}

TEST(ShmStrategy, AnIncompleteSegmentIsRecreated) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors(), 64, /*seed=*/5);
  SegmentCleanup cleanup(path);
  const std::string segment = SegmentOf(path);

  {
    // A creator that died while reading: its header is written, the flag is still 0.
    Loaded creator = LoadShm(path);
    ASSERT_TRUE(creator.status.ok()) << creator.status.message();
    bip::shared_memory_object shm(bip::open_only, segment.c_str(), bip::read_write);
    bip::mapped_region region(shm, bip::read_write);
    auto* header = static_cast<ShmSegmentHeader*>(region.get_address());
    ASSERT_EQ(header->magic, kShmMagic);
    ASSERT_EQ(header->complete, 1u);
    header->complete = 0;
  }
  Loaded again = LoadShm(path);
  ASSERT_TRUE(again.status.ok()) << again.status.message();
  EXPECT_EQ(again.role(), "creator");
  ExpectTensors(again, w, 5);
  EXPECT_EQ(LoadShm(path).role(), "attacher");

  // A creator that died between creating the segment and giving it a size.
  ASSERT_TRUE(RemoveShmSegment(path).ok());
  { bip::shared_memory_object empty(bip::create_only, segment.c_str(), bip::read_write); }
  ASSERT_TRUE(DevShmHas(segment));
  Loaded after_empty = LoadShm(path);
  ASSERT_TRUE(after_empty.status.ok()) << after_empty.status.message();
  EXPECT_EQ(after_empty.role(), "creator");
  ExpectTensors(after_empty, w, 5);
}

// Two loaders that find no segment at the same time: one creates it while the other waits for
// it, then attaches, instead of taking the unfinished segment for a dead creator's.
TEST(ShmStrategy, ConcurrentLoadersMakeOneCreatorAndOneAttacher) {
  test::TempDir dir;
  const std::string path = dir.File("big.wlf");
  // Large enough that the creator is still filling when the second loader arrives.
  std::vector<WlfTensorSpec> tensors;
  for (int i = 0; i < 16; ++i)
    tensors.push_back({"t" + std::to_string(i), WlfDType::kU8, {4u << 20}});
  const test::WrittenWlf w = test::WriteWlfFile(path, tensors, 4096, /*seed=*/3);
  SegmentCleanup cleanup(path);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_TRUE(RemoveShmSegment(path).ok());
    Loaded a, b;
    std::thread ta([&] { a = LoadShm(path, {{"chunk", "64KiB"}}); });
    std::thread tb([&] { b = LoadShm(path, {{"chunk", "64KiB"}}); });
    ta.join();
    tb.join();
    ASSERT_TRUE(a.status.ok()) << a.status.message();
    ASSERT_TRUE(b.status.ok()) << b.status.message();
    std::multiset<std::string> roles{a.role(), b.role()};
    EXPECT_EQ(roles, (std::multiset<std::string>{"attacher", "creator"}));
    EXPECT_EQ(ChecksumTensors(a.views), w.checksum);
    EXPECT_EQ(ChecksumTensors(b.views), w.checksum);
  }
  ASSERT_TRUE(RemoveShmSegment(path).ok());
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + SegmentOf(path) + ".lock"));
}

// Rewritten in place, the file keeps its inode and so its segment name: only the identity in
// the header tells the versions apart. Each rewrite changes one part of it and keeps the span.
TEST(ShmStrategy, ARewrittenFileGetsAFreshSegment) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  auto tensors = test::OddTensors();
  tensors.push_back({"last", WlfDType::kU8, {100}});  // starts a page of its own
  test::WriteWlfFile(path, tensors, 4096, /*seed=*/1);
  SegmentCleanup cleanup(path);
  const std::string segment = SegmentOf(path);
  ASSERT_EQ(LoadShm(path).role(), "creator");

  // Same size, other bytes, a later mtime (set, because a quick rewrite can keep the coarse
  // timestamp the kernel gives files).
  const int64_t mtime = MtimeNs(path);
  const test::WrittenWlf same_size = RewriteInPlace(dir, path, tensors, /*seed=*/2);
  SetMtimeNs(path, mtime + 1'000'000'000);
  ASSERT_EQ(SegmentOf(path), segment);
  TensorTable second_table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &second_table).ok());
  Loaded second = LoadShm(path);
  ASSERT_TRUE(second.status.ok()) << second.status.message();
  EXPECT_EQ(second.role(), "creator");
  ExpectTensors(second, same_size, 2);

  // 8 bytes shorter, with the same span and the mtime of the previous version: only the size
  // differs.
  tensors.back().shape = {92};
  const test::WrittenWlf shorter = RewriteInPlace(dir, path, tensors, /*seed=*/3);
  SetMtimeNs(path, mtime + 1'000'000'000);
  ASSERT_EQ(SegmentOf(path), segment);
  ASSERT_EQ(shorter.layout.file_size + 8, same_size.layout.file_size);
  TensorTable third_table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &third_table).ok());
  ASSERT_EQ(TensorSpan(third_table, 4096).begin, TensorSpan(second_table, 4096).begin);
  ASSERT_EQ(TensorSpan(third_table, 4096).end, TensorSpan(second_table, 4096).end);
  Loaded third = LoadShm(path);
  ASSERT_TRUE(third.status.ok()) << third.status.message();
  EXPECT_EQ(third.role(), "creator");
  ExpectTensors(third, shorter, 3);
}

TEST(ShmStrategy, RemoveShmSegmentRemovesItAndToleratesNone) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors(), 4096, /*seed=*/1);
  SegmentCleanup cleanup(path);
  const std::string segment = SegmentOf(path);
  Loaded loaded = LoadShm(path);
  ASSERT_TRUE(loaded.status.ok()) << loaded.status.message();
  ASSERT_TRUE(DevShmHas(segment));

  Status s = RemoveShmSegment(path);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(DevShmHas(segment));
  s = RemoveShmSegment(path);
  EXPECT_TRUE(s.ok()) << s.message();
  // A process that still maps the segment keeps its bytes: the runner's cleanup cannot pull
  // them from under a worker.
  EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum);
  // Without the segment the next loader creates it again.
  EXPECT_EQ(LoadShm(path).role(), "creator");
}

TEST(ShmStrategy, RemoveShmSegmentNamesAMissingFile) {
  test::TempDir dir;
  const std::string path = dir.File("absent.wlf");
  Status s = RemoveShmSegment(path);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

TEST(ShmStrategy, LoadsAFileWithoutTensors) {
  test::TempDir dir;
  const std::string path = dir.File("empty.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, {});
  SegmentCleanup cleanup(path);
  for (const char* role : {"creator", "attacher"}) {
    Loaded loaded = LoadShm(path);
    ASSERT_TRUE(loaded.status.ok()) << loaded.status.message();
    EXPECT_EQ(loaded.role(), role);
    EXPECT_TRUE(loaded.views.empty());
    EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum);
  }
}

TEST(ShmStrategy, SmallChunksReadEveryByte) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors(), 64, /*seed=*/7);
  SegmentCleanup cleanup(path);
  // 3 bytes: every chunk boundary falls inside a tensor.
  Loaded loaded = LoadShm(path, {{"chunk", "3"}});
  ASSERT_TRUE(loaded.status.ok()) << loaded.status.message();
  EXPECT_EQ(loaded.role(), "creator");
  ExpectTensors(loaded, w, 7);
}

// A sparse file whose one tensor is larger than the free space of /dev/shm: the creator must
// refuse before it writes a byte, because the segment would take memory the machine needs.
TEST(ShmStrategy, RefusesASegmentLargerThanTheFreeSpaceOfDevShm) {
  struct statvfs vfs {};
  ASSERT_EQ(::statvfs("/dev/shm", &vfs), 0);
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (free_bytes > (1ull << 44)) {
    GTEST_SKIP() << "/dev/shm has more free space (" << free_bytes
                 << " bytes) than a sparse test file should span";
  }
  test::TempDir dir;
  const std::string path = dir.File("huge.wlf");
  const std::vector<WlfTensorSpec> tensors = {{"huge", WlfDType::kU8, {free_bytes + (64u << 20)}}};
  FileLayout layout;
  ASSERT_TRUE(PlanWlf(tensors, 4096, &layout).ok());
  test::WriteFileBytes(path, EncodeWlfHead(tensors, layout, 0, 0, 0));
  const WlfTail tail = EncodeWlfTail(layout);
  test::PatchBytes(path, layout.data_end, &tail, sizeof tail);  // the tensor bytes are a hole
  SegmentCleanup cleanup(path);

  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  const uint64_t need = kShmDataOffset + TensorSpan(table, 4096).size();
  Loaded loaded = LoadShm(path);
  EXPECT_EQ(loaded.status.code(), Status::Code::kUnsupported) << loaded.status.message();
  for (const std::string& part : {path, std::string("/dev/shm"), FormatBytes(need)}) {
    EXPECT_NE(loaded.status.message().find(part), std::string::npos)
        << part << " not in: " << loaded.status.message();
  }
  EXPECT_EQ(loaded.role(), "");
  EXPECT_FALSE(DevShmHas(SegmentOf(path)));
}

TEST(ShmStrategy, AMissingFileIsBadInputNamingIt) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  ASSERT_EQ(::unlink(path.c_str()), 0);
  Params params;
  ASSERT_TRUE(Params::Resolve("shm", FindStrategy("shm")->options, {}, &params).ok());
  std::vector<TensorBytes> views;
  Status s = FindStrategy("shm")->make(params)->Load(path, table, &views);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

TEST(ShmStrategy, IsRegisteredAsEagerWithASharedSegmentAndACleanup) {
  const StrategyInfo* info = FindStrategy("shm");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->flags, kEager | kSharedSegment | kModel);
  EXPECT_NE(info->cleanup, nullptr);
  EXPECT_EQ(info->unsupported_reason(), "");
}

// A sharded model, as the runner loads it: the model's path and its joined table.
Loaded LoadShmModel(const test::ShardedModel& model) {
  Loaded out;
  const StrategyInfo* info = FindStrategy("shm");
  Params params;
  out.status = Params::Resolve("shm", info->options, {}, &params);
  out.loader = MakeModelLoader(*info, params, model.table);
  if (out.status.ok()) out.status = out.loader->Load(model.path, model.table, &out.views);
  return out;
}

// One segment per model, named after the model's path: every shard's tensors in it, created
// once, attached by the next load, removed by the cleanup hook given that same path.
TEST(ShmSharded, OneSegmentHoldsEveryShard) {
  for (uint64_t align : {64u, 4096u}) {
    SCOPED_TRACE("align " + std::to_string(align));
    test::TempDir dir;
    const test::ShardedModel model =
        test::WriteWlfShardedModel(dir, test::LayersAcrossShards(), align);
    ASSERT_EQ(model.table.shards.size(), 3u);
    SegmentCleanup cleanup(model.path);
    const std::string segment = SegmentOf(model.path);
    ASSERT_FALSE(DevShmHas(segment));

    Loaded first = LoadShmModel(model);
    ASSERT_TRUE(first.status.ok()) << first.status.message();
    EXPECT_EQ(first.role(), "creator");
    EXPECT_EQ(first.segment(), segment);
    EXPECT_TRUE(DevShmHas(segment));
    ASSERT_EQ(first.views.size(), model.table.tensors.size());
    EXPECT_EQ(ChecksumTensors(first.views), model.checksum);
    // No segment of a shard's own.
    for (const ShardInfo& shard : model.table.shards) {
      EXPECT_FALSE(DevShmHas(SegmentOf(shard.path)));
    }
    // Tensors keep the alignment they have in their files.
    for (size_t i = 0; i < first.views.size(); ++i) {
      if (first.views[i].empty()) continue;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(first.views[i].data()) % align,
                model.table.tensors[i].offset % align);
    }
    first = Loaded();

    Loaded second = LoadShmModel(model);
    ASSERT_TRUE(second.status.ok()) << second.status.message();
    EXPECT_EQ(second.role(), "attacher");
    EXPECT_EQ(second.segment(), segment);
    EXPECT_EQ(ChecksumTensors(second.views), model.checksum);

    std::vector<std::string> removed;
    Status s = FindStrategy("shm")->cleanup(model.path, &removed);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(removed.size(), 1u);
    EXPECT_NE(removed[0].find(segment), std::string::npos) << removed[0];
    EXPECT_FALSE(DevShmHas(segment));
    EXPECT_EQ(LoadShmModel(model).role(), "creator");
  }
}

// The identity covers every shard: a rewrite of the last one (same size, other bytes, another
// mtime) makes the next load a creator that serves the new bytes.
TEST(ShmSharded, ARewrittenShardGetsAFreshSegment) {
  test::TempDir dir;
  const auto shards = test::LayersAcrossShards();
  const test::ShardedModel model = test::WriteWlfShardedModel(dir, shards);
  SegmentCleanup cleanup(model.path);
  ASSERT_EQ(LoadShmModel(model).role(), "creator");
  ASSERT_EQ(LoadShmModel(model).role(), "attacher");

  const std::string last = model.table.shards[2].path;
  const int64_t mtime = MtimeNs(last);
  RewriteInPlace(dir, last, shards[2], /*seed=*/9);
  SetMtimeNs(last, mtime + 1'000'000'000);
  test::ShardedModel rewritten = model;
  rewritten.checksum = test::PreadModelChecksum(model.table);
  ASSERT_NE(rewritten.checksum, model.checksum);
  Loaded again = LoadShmModel(rewritten);
  ASSERT_TRUE(again.status.ok()) << again.status.message();
  EXPECT_EQ(again.role(), "creator");
  EXPECT_EQ(again.segment(), SegmentOf(model.path));
  EXPECT_EQ(ChecksumTensors(again.views), rewritten.checksum);
}

TEST(ShmSharded, LoadsAGeneratedGgufModel) {
  test::TempDir dir;
  const test::ShardedModel model = test::GenerateShardedModel(dir, "gguf", 3, 1ull << 20);
  SegmentCleanup cleanup(model.path);
  for (const char* role : {"creator", "attacher"}) {
    Loaded loaded = LoadShmModel(model);
    ASSERT_TRUE(loaded.status.ok()) << loaded.status.message();
    EXPECT_EQ(loaded.role(), role);
    EXPECT_EQ(ChecksumTensors(loaded.views), model.checksum);
  }
}

TEST(ShmSharded, AMissingShardIsBadInputNamingIt) {
  test::TempDir dir;
  const test::ShardedModel model = test::WriteWlfShardedModel(dir, test::LayersAcrossShards());
  SegmentCleanup cleanup(model.path);
  const std::string gone = model.table.shards[1].path;
  ASSERT_EQ(::unlink(gone.c_str()), 0);
  Loaded loaded = LoadShmModel(model);
  EXPECT_EQ(loaded.status.code(), Status::Code::kBadInput);
  EXPECT_NE(loaded.status.message().find(gone), std::string::npos) << loaded.status.message();
  EXPECT_FALSE(DevShmHas(SegmentOf(model.path)));
}

}  // namespace
}  // namespace loadbench
