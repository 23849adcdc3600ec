// Every registered strategy loads every tensor of small files with odd sizes and alignments,
// byte for byte, and its views checksum to the value the file stores.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "tests/support/generated_model.h"
#include "tests/support/load_with.h"
#include "tests/support/real_files.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

struct Loaded {
  std::unique_ptr<Loader> loader;  // owns the memory the views point into
  std::vector<TensorBytes> views;
  // What a strategy leaves outside the process (shm: its segment), removed while the file still
  // exists to name it: a Loaded is declared after the TempDir that holds the file.
  std::function<void()> cleanup;
  ~Loaded() {
    if (cleanup) cleanup();
  }
};

Status LoadWith(const std::string& strategy_text, const std::string& path, Loaded* out) {
  const StrategyInfo* info = FindStrategy(strategy_text.substr(0, strategy_text.find(':')));
  if (info != nullptr && info->cleanup) {
    out->cleanup = [c = info->cleanup, path] { (void)c(path, nullptr); };
  }
  return test::LoadWith(strategy_text, path, &out->loader, &out->views);
}

class StrategyTest : public ::testing::TestWithParam<std::string> {
 protected:
  // A strategy this machine cannot run (io_uring disabled, a kernel without an madvise it
  // needs) is skipped with its reason, never failed.
  void SetUp() override {
    const std::string name = GetParam().substr(0, GetParam().find(':'));
    const StrategyInfo* info = FindStrategy(name);
    ASSERT_NE(info, nullptr) << name;
    if (const std::string why = info->unsupported_reason(); !why.empty()) {
      GTEST_SKIP() << name << ": " << why;
    }
  }
};

TEST_P(StrategyTest, LoadsOddTensorsExactly) {
  test::TempDir dir;
  const auto tensors = test::OddTensors();
  for (uint64_t align : {64u, 4096u}) {
    const std::string path = dir.File("odd.wlf");
    const test::WrittenWlf w = test::WriteWlfFile(path, tensors, align, /*seed=*/align);
    Loaded loaded;
    Status s = LoadWith(GetParam(), path, &loaded);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(loaded.views.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto expected = test::TensorData(align, i, w.layout.tensor_sizes[i]);
      ASSERT_EQ(loaded.views[i].size(), expected.size()) << "tensor " << i;
      if (expected.empty()) continue;  // memcmp may not be given the null data() of nothing
      EXPECT_EQ(std::memcmp(loaded.views[i].data(), expected.data(), expected.size()), 0)
          << GetParam() << ": tensor " << i << " differs (align " << align << ")";
    }
    EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum) << GetParam();
  }
}

TEST_P(StrategyTest, LoadsAFileWithoutTensors) {
  test::TempDir dir;
  const std::string path = dir.File("empty.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, {});
  Loaded loaded;
  Status s = LoadWith(GetParam(), path, &loaded);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(loaded.views.empty());
  EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum);
}

TEST_P(StrategyTest, AMissingFileIsBadInputNamingIt) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  ASSERT_EQ(::unlink(path.c_str()), 0);
  const StrategyInfo* info = FindStrategy(GetParam().substr(0, GetParam().find(':')));
  Params params;
  ASSERT_TRUE(Params::Resolve(info->name, info->options, {}, &params).ok());
  std::vector<TensorBytes> views;
  Status s =
      (info->flags & kStreams)
          ? info->make(params)->LoadGroups(path, table, LayerGroups(table),
                                           [](const auto&, const auto&) { return Status::Ok(); })
          : info->make(params)->Load(path, table, &views);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

// Tensors far larger than the small chunks below, with sizes that are no multiple of anything,
// so that chunk, slice and thread boundaries fall inside tensors and the span ends mid-chunk.
TEST_P(StrategyTest, LoadsAFileInManyChunksAcrossTensorBoundaries) {
  test::TempDir dir;
  const std::vector<WlfTensorSpec> tensors = {
      {"big.0", WlfDType::kU8, {300001}},
      {"big.1", WlfDType::kBF16, {3, 33331}},
      {"big.2", WlfDType::kU8, {1}},
      {"big.3", WlfDType::kF32, {77777}},
  };
  const std::string path = dir.File("big.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, tensors, 64, /*seed=*/7);
  Loaded loaded;
  Status s = LoadWith(GetParam(), path, &loaded);
  ASSERT_TRUE(s.ok()) << s.message();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto expected = test::TensorData(7, i, w.layout.tensor_sizes[i]);
    ASSERT_EQ(loaded.views[i].size(), expected.size());
    EXPECT_EQ(std::memcmp(loaded.views[i].data(), expected.data(), expected.size()), 0)
        << GetParam() << ": tensor " << i << " differs";
  }
  EXPECT_EQ(ChecksumTensors(loaded.views), w.checksum) << GetParam();
}

// One preset written as WLF, safetensors and GGUF with one seed, once per process.
const std::vector<std::string>& GeneratedInEveryFormat() {
  static test::TempDir dir;
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    for (const char* format : {"wlf", "safetensors", "gguf"}) {
      const std::string path = dir.File(std::string("llama.") + format);
      test::WriteModel({.path = path, .format = format, .seed = 11});
      out.push_back(path);
    }
    return out;
  }();
  return paths;
}

// The same tensors in every format: every strategy loads the same bytes from each, and they
// hash to what each file stores.
TEST_P(StrategyTest, LoadsEveryFormatToTheSameChecksum) {
  std::optional<uint64_t> first;
  for (const std::string& path : GeneratedInEveryFormat()) {
    TensorTable table;
    ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
    ASSERT_TRUE(table.expected_checksum.has_value()) << path;
    Loaded loaded;
    Status s = LoadWith(GetParam(), path, &loaded);
    ASSERT_TRUE(s.ok()) << s.message();
    const uint64_t sum = ChecksumTensors(loaded.views);
    EXPECT_EQ(sum, *table.expected_checksum) << GetParam() << " on " << path;
    if (first) {
      EXPECT_EQ(sum, *first) << GetParam() << ": " << path << " holds other bytes";
    }
    first = sum;
  }
}

// Files written by other tools store no checksum: every strategy must give the checksum of a
// plain pread of every tensor, as the runner checks it.
TEST_P(StrategyTest, LoadsEveryRealFileToTheReferenceChecksum) {
  std::vector<std::string> missing;
  const std::vector<std::string> files = test::RealFiles(&missing);
  ASSERT_FALSE(files.empty()) << "tests/real/ holds no weight files";
  for (const std::string& path : files) {
    TensorTable table;
    Status s = ReadTensorTableFromPath(path, &table);
    ASSERT_TRUE(s.ok()) << s.message();
    UniqueFd fd;
    ASSERT_TRUE(OpenReadOnly(path, 0, &fd).ok());
    uint64_t reference = 0;
    ASSERT_TRUE(ChecksumFile(FileSource(fd.get(), path, std::filesystem::file_size(path)), table,
                             &reference)
                    .ok());
    Loaded loaded;
    s = LoadWith(GetParam(), path, &loaded);
    ASSERT_TRUE(s.ok()) << GetParam() << " on " << path << ": " << s.message();
    ASSERT_EQ(loaded.views.size(), table.tensors.size());
    for (size_t i = 0; i < table.tensors.size(); ++i) {
      EXPECT_EQ(loaded.views[i].size(), table.tensors[i].size) << path << " tensor " << i;
    }
    EXPECT_EQ(ChecksumTensors(loaded.views), reference) << GetParam() << " on " << path;
  }
  for (const std::string& m : missing) std::printf("not tested: %s\n", m.c_str());
}

// Every registered strategy with its defaults (a new strategy is tested from the moment it is
// registered; those into GPU memory are tested in loaders/cuda/tests/device_test.cc).
std::vector<std::string> EveryStrategy() {
  std::vector<std::string> out;
  for (const StrategyInfo* s : Strategies()) {
    if ((s->flags & (kDevice | kRemote)) == 0) out.push_back(s->name);  // local files
  }
  return out;
}
INSTANTIATE_TEST_SUITE_P(Defaults, StrategyTest, ::testing::ValuesIn(EveryStrategy()),
                         test::SpecName());

// Options that make a strategy's loop run many times: fread with a 3-byte buffer crosses every
// tensor boundary mid-buffer; 4 KiB chunks and 3 threads put slice boundaries inside tensors;
// thp buffers are one region instead of one malloc per tensor.
INSTANTIATE_TEST_SUITE_P(Options, StrategyTest,
                         ::testing::Values("fread:chunk=3", "fread:buffer=thp", "pread:chunk=5",
                                           "pread:buffer=thp", "pread_mt:threads=3:chunk=4KiB",
                                           "pread_mt:threads=2:buffer=thp",
                                           "odirect:threads=3:chunk=4KiB", "odirect:buffer=thp",
                                           "io_uring:qd=2:chunk=4KiB",
                                           "io_uring:direct=on:fixed=on:regfile=on:chunk=4KiB",
                                           "io_uring:buffer=thp", "mmap_prefetch:rate=1",
                                           "layered:advice=none:ahead=off:drop=on"),
                         test::SpecName());

TEST(StrategyRegistry, HoldsTheStrategiesTheDocsName) {
  // The Defaults suite above is as long as the registry: an empty registry would test nothing.
  for (const char* name :
       {"fread", "pread", "pread_mt", "odirect", "io_uring", "mmap", "mmap_seq", "mmap_willneed",
        "mmap_populate", "mmap_populate_read", "mmap_prefetch", "mlock", "shm", "layered"}) {
    EXPECT_NE(FindStrategy(name), nullptr) << name;
  }
}

TEST(MmapStrategy, RefusesAFileThatChangedSizeSinceValidation) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(table.file_size / 2)), 0);
  const StrategyInfo* info = FindStrategy("mmap");
  Params params;
  ASSERT_TRUE(Params::Resolve(info->name, info->options, {}, &params).ok());
  std::vector<TensorBytes> views;
  Status s = info->make(params)->Load(path, table, &views);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("changed size"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace loadbench
