// The CUDA strategies. The layout and registration tests run everywhere the strategies are
// built; the loads and the device checksum need a GPU and skip, with the reason, without one.
#include <unistd.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include "loaders/cuda/device.h"
#include "loaders/cuda/device_checksum.h"
#include "loaders/format/format.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "loaders/use/use.h"
#include "tests/support/generated_model.h"
#include "tests/support/load_with.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

const std::vector<std::string> kDeviceStrategies = {"cuda_bounce", "cuda_gds", "cuda_pageable",
                                                    "cuda_register"};

#define SKIP_WITHOUT_GPU()                                                  \
  do {                                                                      \
    if (!cuda::UnsupportedReason().empty()) {                               \
      GTEST_SKIP() << "needs a CUDA device: " << cuda::UnsupportedReason(); \
    }                                                                       \
  } while (0)

// LoadToDevice of the strategy `spec` names, with its options resolved, on a table already read:
// the file may have changed since, as a test makes it.
Status LoadToDeviceWith(const std::string& spec, const std::string& path,
                        const TensorTable& table) {
  std::vector<StrategySpec> specs;
  LB_RETURN_IF_ERROR(ParseStrategyList(spec, &specs));
  const StrategyInfo* info = FindStrategy(specs[0].name);
  Params params;
  UseOptions use;
  LB_RETURN_IF_ERROR(ResolveSpec(*info, specs[0], &params, &use));
  DeviceLoad d;
  return info->make(params)->LoadToDevice(path, table, &d);
}

TensorTable Table(std::vector<std::pair<uint64_t, uint64_t>> offset_size) {
  TensorTable t;
  for (size_t i = 0; i < offset_size.size(); ++i) {
    t.tensors.push_back({"t" + std::to_string(i),
                         "u8",
                         {offset_size[i].second},
                         offset_size[i].first,
                         offset_size[i].second});
    t.tensor_bytes += offset_size[i].second;
  }
  return t;
}

TEST(CudaLayout, PacksTensorsBackToBackInTableOrder) {
  // Table order differs from file order, as a safetensors header may have it.
  const TensorTable t = Table({{5000, 10}, {100, 7}, {0, 0}, {9000, 3}});
  EXPECT_EQ(cuda::PackedOffsets(t), (std::vector<uint64_t>{0, 10, 17, 17}));
}

TEST(CudaLayout, PiecesCoverEachTensorByteOnceInFileOrder) {
  const TensorTable t = Table({{5000, 10}, {100, 7}, {0, 0}, {9000, 3}});
  const std::vector<uint64_t> packed = cuda::PackedOffsets(t);
  // Chunks of 4096 bytes: tensor 1 lies in the first, tensor 0 in the second, tensor 3 in the
  // third; the empty tensor gives no piece.
  std::vector<cuda::Piece> all;
  for (uint64_t at = 0; at < 12288; at += 4096) {
    for (const cuda::Piece& p : cuda::PiecesIn(t, packed, at, at + 4096)) {
      EXPECT_GE(p.file_offset, at);
      EXPECT_LE(p.file_offset + p.size, at + 4096);
      all.push_back(p);
    }
  }
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].file_offset, 100u);
  EXPECT_EQ(all[0].device_offset, 10u);
  EXPECT_EQ(all[0].size, 7u);
  EXPECT_EQ(all[1].file_offset, 5000u);
  EXPECT_EQ(all[1].device_offset, 0u);
  EXPECT_EQ(all[2].device_offset, 17u);
  // A tensor cut by a chunk boundary comes in two pieces that continue each other.
  const TensorTable cut = Table({{4000, 200}});
  const auto a = cuda::PiecesIn(cut, {0}, 0, 4096), b = cuda::PiecesIn(cut, {0}, 4096, 8192);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].size, 96u);
  EXPECT_EQ(b[0].file_offset, 4096u);
  EXPECT_EQ(b[0].device_offset, 96u);
  EXPECT_EQ(b[0].size, 104u);
}

TEST(CudaStrategies, AreRegisteredAsDeviceStrategies) {
  std::set<std::string> device;
  for (const StrategyInfo* s : Strategies()) {
    if (s->flags & kDevice) device.insert(s->name);
  }
  EXPECT_EQ(device, std::set<std::string>(kDeviceStrategies.begin(), kDeviceStrategies.end()));
}

TEST(CudaStrategies, PageableCopiesFromEveryHostStrategyItOffers) {
  const StrategyInfo* info = FindStrategy("cuda_pageable");
  ASSERT_NE(info, nullptr);
  ASSERT_EQ(info->options[0].name, "host");
  for (const std::string& host : info->options[0].choices) {
    const StrategyInfo* h = FindStrategy(host);
    ASSERT_NE(h, nullptr) << host;
    EXPECT_EQ(h->flags & (kDevice | kStreams | kSharedSegment), 0u) << host;
  }
}

TEST(CudaStrategies, RefuseUseOptionsThatActOnHostMemory) {
  for (const std::string& name : kDeviceStrategies) {
    std::vector<StrategySpec> specs;
    ASSERT_TRUE(ParseStrategyList(name + ":consume=forward", &specs).ok());
    Params params;
    UseOptions use;
    const Status s = ResolveSpec(*FindStrategy(name), specs[0], &params, &use);
    EXPECT_EQ(s.code(), Status::Code::kUnsupported) << name;
    EXPECT_NE(s.message().find("GPU memory"), std::string::npos) << s.message();
    ASSERT_TRUE(ParseStrategyList(name + ":label=a", &specs).ok());
    EXPECT_TRUE(ResolveSpec(*FindStrategy(name), specs[0], &params, &use).ok()) << name;
  }
}

// Without a GPU a run is `unsupported` with the reason, and never a number.
TEST(CudaStrategies, AreUnsupportedWithTheReasonWithoutAGpu) {
  if (cuda::UnsupportedReason().empty()) GTEST_SKIP() << "a GPU is present";
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  for (const std::string& name : kDeviceStrategies) {
    EXPECT_NE(FindStrategy(name)->unsupported_reason(), "") << name;
    const auto r = test::WorkerRecord(path, name);
    EXPECT_EQ(r["status"], "unsupported") << r.dump();
    EXPECT_TRUE(r["wall_s"].is_null()) << r.dump();  // never a number
    EXPECT_NE(r["error"].get<std::string>().find("CUDA"), std::string::npos) << r.dump();
  }
}

// Checked before any CUDA call, so on every machine.
TEST(CudaStrategies, BounceRefusesAChunkItCannotReadInOneRequest) {
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, test::OddTensors());
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  for (const char* spec : {"cuda_bounce:chunk=2GiB:direct=off", "cuda_bounce:chunk=5000"}) {
    const Status s = LoadToDeviceWith(spec, path, table);
    if (s.code() == Status::Code::kUnsupported &&
        s.message().find("O_DIRECT") != std::string::npos) {
      continue;  // a filesystem without O_DIRECT: the alignment rule cannot apply
    }
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << spec << ": " << s.message();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
}

// ---- on a GPU ----

std::vector<uint8_t> RandomBytes(size_t n, unsigned seed) {
  std::vector<uint8_t> b(n);
  std::mt19937_64 rng(seed);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

uint64_t OnDevice(const std::vector<uint8_t>& bytes, std::string* error) {
  cuda::DeviceMemory mem;
  cuda::Stream stream;
  Status s = mem.Allocate(bytes.size(), "test");
  if (s.ok()) s = stream.Create("test");
  if (s.ok()) {
    s = cuda::Check(cudaMemcpy(mem.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
                    "test", "cudaMemcpy");
  }
  uint64_t out = 0;
  if (s.ok())
    s = cuda::Check(cuda::DeviceXxh3(mem.get(), bytes.size(), stream.get(), &out), "test",
                    "DeviceXxh3");
  *error = s.message();
  return out;
}

TEST(CudaChecksum, EqualsTheHostChecksumAtEveryPathAndBoundary) {
  SKIP_WITHOUT_GPU();
  // Short paths, the 240/241 switch, block boundaries, and past one 64 MiB segment of lane
  // sums into the next.
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 2100; ++n) lengths.push_back(n);
  for (size_t n : {4096 + 7, (1 << 20) + 13, (64 << 20) + 3 * 1024 + 5, (64 << 20)}) {
    lengths.push_back(n);
  }
  const std::vector<uint8_t> bytes = RandomBytes((64 << 20) + 4 * 1024, 11);
  for (size_t n : lengths) {
    const std::vector<uint8_t> part(bytes.begin(), bytes.begin() + static_cast<long>(n));
    std::string error;
    const uint64_t got = OnDevice(part, &error);
    ASSERT_EQ(error, "") << n;
    ASSERT_EQ(got, XXH3_64bits(part.data(), n)) << "length " << n;
  }
}

TEST(CudaChecksum, ChangesWhenOneByteOnTheDeviceDoes) {
  SKIP_WITHOUT_GPU();
  std::vector<uint8_t> bytes = RandomBytes(3 << 20, 5);
  std::string error;
  const uint64_t before = OnDevice(bytes, &error);
  bytes[1234567] ^= 1;
  EXPECT_NE(OnDevice(bytes, &error), before);
  EXPECT_EQ(OnDevice(bytes, &error), XXH3_64bits(bytes.data(), bytes.size()));
}

class CudaLoad : public ::testing::TestWithParam<std::string> {};

// Tensor sizes that are no multiple of anything, small chunks so that chunk boundaries fall
// inside tensors: every strategy's record must be ok with the file's checksum, on the device.
TEST_P(CudaLoad, PutsEveryTensorOnTheDeviceWithTheFilesChecksum) {
  SKIP_WITHOUT_GPU();
  const std::string name = GetParam().substr(0, GetParam().find(':'));
  if (std::string why = FindStrategy(name)->unsupported_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  test::TempDir dir;
  const std::vector<WlfTensorSpec> tensors = {
      {"big.0", WlfDType::kU8, {300001}},
      {"big.1", WlfDType::kBF16, {3, 33331}},
      {"big.2", WlfDType::kU8, {1}},
      {"big.3", WlfDType::kF32, {77777}},
  };
  for (uint64_t align : {64u, 4096u}) {
    const std::string path = dir.File("big.wlf");
    const test::WrittenWlf w = test::WriteWlfFile(path, tensors, align, /*seed=*/7);
    const auto r = test::WorkerRecord(path, GetParam());
    ASSERT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r["checksum_ok"], true) << r.dump();
    EXPECT_EQ(r["verify"], "device");
    EXPECT_EQ(r["checksum"], fmt::format("{:016x}", w.checksum));
    EXPECT_EQ(r["device"]["device_bytes"], w.layout.tensor_sizes[0] + w.layout.tensor_sizes[1] +
                                               w.layout.tensor_sizes[2] + w.layout.tensor_sizes[3]);
    EXPECT_LE(r["ready_s"].get<double>(), r["wall_s"].get<double>());
  }
}

TEST_P(CudaLoad, AFileShortenedAfterItsTableWasReadIsBadInput) {
  SKIP_WITHOUT_GPU();
  const std::string name = GetParam().substr(0, GetParam().find(':'));
  if (std::string why = FindStrategy(name)->unsupported_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  test::TempDir dir;
  const std::string path = dir.File("odd.wlf");
  test::WriteWlfFile(path, {{"a", WlfDType::kU8, {200000}}}, 4096, 3);
  TensorTable table;
  ASSERT_TRUE(ReadTensorTableFromPath(path, &table).ok());
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(table.tensors[0].offset + 4096)), 0);
  const Status s = LoadToDeviceWith(GetParam(), path, table);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaLoad,
                         ::testing::Values("cuda_pageable", "cuda_pageable:host=mmap",
                                           "cuda_pageable:host=odirect", "cuda_bounce",
                                           "cuda_bounce:buffers=2:chunk=8KiB",
                                           "cuda_bounce:io=pread:chunk=4KiB",
                                           "cuda_bounce:direct=off:chunk=12KiB:buffers=3",
                                           "cuda_register", "cuda_register:chunk=8KiB:ahead=1",
                                           "cuda_gds", "cuda_gds:chunk=4KiB"),
                         test::SpecName());

}  // namespace
}  // namespace loadbench
