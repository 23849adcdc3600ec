// mmap_prefetch: loads byte-exactly however far its thread got, the thread covers the whole data
// area when uncapped, keeps to its rate cap, and stops when the loader is destroyed mid-way.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "tests/support/load_with.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

using test::LoadWith;

// Polls `loader`'s Details until `done` holds of it, for at most a minute: a bound for a
// stalled thread, not a timing requirement.
bool WaitForDetails(const Loader& loader, const std::function<bool(const nlohmann::json&)>& done) {
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < give_up) {
    if (done(loader.Details())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

uint64_t PageSize() { return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)); }

TEST(MmapPrefetchStrategy, LoadsOddTensorsExactly) {
  test::TempDir dir;
  const auto tensors = test::OddTensors();
  // rate=1 (1 MB/s): the consumer overtakes the thread at once.
  for (const char* spec : {"mmap_prefetch", "mmap_prefetch:rate=1"}) {
    for (uint64_t align : {64u, 4096u}) {
      const std::string path = dir.File("odd.wlf");
      const test::WrittenWlf w = test::WriteWlfFile(path, tensors, align, /*seed=*/align);
      std::unique_ptr<Loader> loader;
      std::vector<TensorBytes> views;
      Status s = LoadWith(spec, path, &loader, &views);
      ASSERT_TRUE(s.ok()) << spec << ": " << s.message();
      ASSERT_EQ(views.size(), tensors.size());
      for (size_t i = 0; i < tensors.size(); ++i) {
        const auto expected = test::TensorData(align, i, w.layout.tensor_sizes[i]);
        ASSERT_EQ(views[i].size(), expected.size()) << "tensor " << i;
        if (expected.empty()) continue;  // memcmp may not be given the null data() of nothing
        EXPECT_EQ(std::memcmp(views[i].data(), expected.data(), expected.size()), 0)
            << spec << ": tensor " << i << " differs (align " << align << ")";
      }
      EXPECT_EQ(ChecksumTensors(views), w.checksum) << spec;
    }
  }
}

TEST(MmapPrefetchStrategy, UncappedThreadTouchesEveryPageOfTheDataAreaAndFinishes) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());
  std::unique_ptr<Loader> loader;
  std::vector<TensorBytes> views;
  ASSERT_TRUE(LoadWith("mmap_prefetch", path, &loader, &views).ok());
  ASSERT_TRUE(WaitForDetails(*loader, [](const auto& d) { return d["prefetch_finished"] == true; }))
      << loader->Details().dump();
  const nlohmann::json d = loader->Details();
  const uint64_t data_pages =
      (w.layout.file_size - w.layout.data_offset + PageSize() - 1) / PageSize();
  EXPECT_EQ(d["prefetch_pages_touched"], data_pages) << d.dump();
  ASSERT_TRUE(d["prefetch_s"].is_number()) << d.dump();
  EXPECT_GE(d["prefetch_s"].get<double>(), 0.0);
  EXPECT_EQ(ChecksumTensors(views), w.checksum);
}

// A data area of holes, far larger than a capped thread could cover while the test runs: the
// thread must keep to its cap, be unfinished, and stop when the loader is destroyed.
TEST(MmapPrefetchStrategy, CappedThreadKeepsToItsRateAndStopsWhenDestroyed) {
  test::TempDir dir;
  const std::vector<WlfTensorSpec> tensors = {{"holes", WlfDType::kU8, {uint64_t{64} << 30}}};
  FileLayout layout;
  ASSERT_TRUE(PlanWlf(tensors, 4096, &layout).ok());
  const std::string path = dir.File("sparse.wlf");
  test::WriteFileBytes(path, EncodeWlfHead(tensors, layout, /*flags=*/0, 0, 0));
  const WlfTail tail = EncodeWlfTail(layout);
  test::PatchBytes(path, layout.data_end, &tail, sizeof tail);

  constexpr double kRateBytesPerS = 1e6;  // rate=1
  const auto before_load = Clock::now();
  std::unique_ptr<Loader> loader;
  std::vector<TensorBytes> views;
  Status s = LoadWith("mmap_prefetch:rate=1", path, &loader, &views);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(WaitForDetails(*loader, [](const auto& d) {
    return d["prefetch_pages_touched"] >= 3;
  })) << loader->Details().dump();
  // Page n is touched only once n - 1 pages' worth of time at the cap, less the millisecond the
  // thread may run ahead, has passed since it started, which is after before_load.
  for (int i = 0; i < 5; ++i) {
    const uint64_t touched = loader->Details()["prefetch_pages_touched"];
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - before_load).count();
    EXPECT_LE(static_cast<double>((touched - 1) * PageSize()), kRateBytesPerS * (elapsed_s + 1e-3))
        << touched << " pages in " << elapsed_s << " s";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const nlohmann::json d = loader->Details();
  EXPECT_EQ(d["prefetch_finished"], false) << d.dump();
  EXPECT_TRUE(d["prefetch_s"].is_number()) << d.dump();
  EXPECT_EQ(static_cast<uint8_t>(views[0][0]), 0u);  // a hole reads as zeros

  // The uncapped rest would take 64 GiB / 1 MB/s, about 19 hours: a minute is only a bound.
  const auto before_destroy = Clock::now();
  loader.reset();
  EXPECT_LT(Clock::now() - before_destroy, std::chrono::seconds(60));
}

TEST(MmapPrefetchStrategy, RefusesAFileThatChangedSizeSinceValidation) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(table.file_size / 2)), 0);
  const StrategyInfo* info = FindStrategy("mmap_prefetch");
  Params params;
  ASSERT_TRUE(Params::Resolve(info->name, info->options, {}, &params).ok());
  std::unique_ptr<Loader> loader = info->make(params);
  std::vector<TensorBytes> views;
  Status s = loader->Load(path, table, &views);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("changed size"), std::string::npos) << s.message();
  EXPECT_EQ(loader->Details()["prefetch_pages_touched"], 0) << "no thread without a mapping";
}

}  // namespace
}  // namespace loadbench
