// A storage's own probe on a small file of the data disk (no storage made, no throttle): every
// recipe, every request size and depth, and the random reads give positive figures in the
// probe's shape, each read bounded in time, with the device's requests counted where the
// device is named; bad input is refused; `probe --storage` with a storage it cannot read exits 2
// with one line.
#include "harness/probe/storage_probe.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/probe/read_recipes.h"
#include "loaders/base/file_io.h"
#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The block device (its /sys/class/block name) that holds `path`, or "" when there is none.
std::string BlockDeviceOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  std::error_code ec;
  const fs::path link =
      fs::read_symlink(fmt::format("/sys/dev/block/{}:{}", major(st.st_dev), minor(st.st_dev)), ec);
  return ec ? "" : link.filename().string();
}

class StorageProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/loadbench_storage_probe_test.XXXXXX";  // not tmpfs: cold reads
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // Two files, one on no block boundary, so that the reads run from one into the other.
    paths_ = {dir_ + "/a", dir_ + "/b"};
    test::WriteRandom(paths_[0], 6 * kMiB, 1);
    test::WriteRandom(paths_[1], 2 * kMiB + 12345, 2);
    UniqueFd fd;
    no_direct_ = OpenReadOnly(paths_[0], O_DIRECT, &fd).message();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string dir_, no_direct_;
  std::vector<std::string> paths_;
};

// Every read figure of the probe: a positive rate from what arrived, or null with a reason.
void ExpectRead(const Json& m, bool with_device) {
  ASSERT_TRUE(m["gb_per_s"].is_number()) << m.dump(2);
  EXPECT_GT(m["gb_per_s"].get<double>(), 0) << m.dump(2);
  EXPECT_GT(m["bytes"].get<uint64_t>(), 0u) << m.dump(2);
  EXPECT_GT(m["seconds"].get<double>(), 0) << m.dump(2);
  EXPECT_TRUE(m["capped"].is_boolean()) << m.dump(2);
  ASSERT_FALSE(m["cold_checks"].empty()) << m.dump(2);
  for (const Json& c : m["cold_checks"]) EXPECT_LE(c["resident"].get<double>(), 0.01);
  if (with_device) {
    // The device served the reads of every figure (others' reads may add to its counters).
    ASSERT_TRUE(m["device_reads"].is_number()) << m.dump(2);
    EXPECT_GT(m["device_reads"].get<uint64_t>(), 0u) << m.dump(2);
    EXPECT_GT(m["device_request_bytes"].get<uint64_t>(), 0u) << m.dump(2);
  } else {
    EXPECT_FALSE(m.contains("device_reads")) << m.dump(2);
  }
}

TEST_F(StorageProbeTest, EveryRecipeRequestSizeAndTheIopsGiveAFigure) {
  if (!no_direct_.empty()) GTEST_SKIP() << no_direct_;
  const std::string device = BlockDeviceOf(paths_[0]);
  std::vector<std::string> lines;
  Json p;
  const Status s = ProbeStorageDevice(
      paths_, device, &p,
      {.figure_seconds = 0.2, .progress = [&](const std::string& l) { lines.push_back(l); }});
  ASSERT_TRUE(s.ok()) << s.message();
  const bool with_device = !device.empty() && ReadDeviceReads(device).has_value();
  SCOPED_TRACE(device);

  EXPECT_EQ(p["bytes"], 8 * kMiB + 12345);
  EXPECT_EQ(p["figure_seconds"], 0.2);
  const Json& c = p["ceilings"];
  ASSERT_EQ(c["device_limit"]["recipes"].size(), std::size(kReadRecipes)) << c.dump(2);
  for (const auto& [name, m] : c["device_limit"]["recipes"].items()) {
    SCOPED_TRACE(name);
    ExpectRead(m, with_device);
    EXPECT_EQ(m["params"], RecipeParams(*FindRecipe(name)));
  }
  const std::string fastest = c["device_limit"]["recipe"];
  EXPECT_EQ(c["device_limit"]["gb_per_s"], c["device_limit"]["recipes"][fastest]["gb_per_s"]);
  EXPECT_EQ(c["cold_direct_read"], c["device_limit"]["recipes"][kReadRecipes[0].name]);
  ExpectRead(c["cold_buffered_read"], with_device);
  EXPECT_EQ(c["cold_buffered_read"]["params"]["advice"], "normal");

  const std::vector<RequestShape>& shapes = StorageRequestShapes();
  ASSERT_EQ(p["requests"].size(), shapes.size()) << p.dump(2);
  double most = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Json& r = p["requests"][i];
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(r["request_bytes"], shapes[i].request_bytes);
    EXPECT_EQ(r["depth"], shapes[i].depth);
    EXPECT_EQ(r["pattern"], shapes[i].random ? "random" : "sequential");
    ExpectRead(r, with_device);
    ASSERT_TRUE(r["iops"].is_number());
    EXPECT_GT(r["iops"].get<double>(), 0);
    most = std::max(most, r["iops"].get<double>());
    // The file is read whole in a fraction of a second; random reads stop only on time.
    if (shapes[i].random) {
      EXPECT_GE(r["seconds"].get<double>(), 0.2);
    }
  }
  EXPECT_EQ(p["iops"].get<double>(), most);
  EXPECT_TRUE(p["iops_at"]["request_bytes"].is_number());
  // The sweep has what a storage is judged by: 4 KiB-16 KiB random reads at depth and 64 KiB to
  // 4 MiB at depth 1 and deeper.
  EXPECT_TRUE(std::any_of(shapes.begin(), shapes.end(), [](const RequestShape& s) {
    return s.random && s.request_bytes == 4096 && s.depth > 1;
  }));
  EXPECT_EQ(lines.size(), std::size(kReadRecipes) + 1 + shapes.size());
  EXPECT_NE(lines[0].find("[1/"), std::string::npos) << lines[0];

  const std::string table = StorageProbeTable(p);
  for (const char* word : {"direct_1m_qd32", "device limit", "64.00 KiB", "random", "4.00 MiB"}) {
    EXPECT_NE(table.find(word), std::string::npos) << word << "\n" << table;
  }
}

TEST_F(StorageProbeTest, AReadBoundedInTimeStopsAndCountsWhatArrived) {
  if (!no_direct_.empty()) GTEST_SKIP() << no_direct_;
  // 4 KiB at a time, one in flight: 2,100 reads for the whole 8 MiB, and the bound of 5 ms comes
  // long before them (at 10 us a read, 500). A whole read first, so that the bounded one's
  // time goes to reads, not to faulting in this binary's code. The bytes counted are the ones
  // that arrived, a whole number of requests.
  const ReadRecipe slow{"slow", true, 4096, 1, 1, "none", 0, false};
  uint64_t bytes = 0;
  double seconds = 0;
  ASSERT_TRUE(ReadWithRecipe(slow, paths_, &bytes, &seconds).ok());
  EXPECT_EQ(bytes, 8 * kMiB + 12345) << "unbounded: every byte";
  const Status s = ReadWithRecipe(slow, paths_, &bytes, &seconds, nullptr, 0.005);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GT(bytes, 0u);
  EXPECT_LT(bytes, 8 * kMiB);
  EXPECT_EQ(bytes % 4096, 0u);
  EXPECT_GE(seconds, 0.005);
}

TEST_F(StorageProbeTest, NoFilesOrAFileThatCannotBeOpenedIsBadInput) {
  Json p = {{"untouched", true}};
  EXPECT_EQ(ProbeStorageDevice({}, "", &p).code(), Status::Code::kBadInput);
  const std::string missing = dir_ + "/missing";
  const Status s = ProbeStorageDevice({paths_[0], missing}, "", &p);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(missing), std::string::npos) << s.message();
  EXPECT_EQ(p, Json({{"untouched", true}}));
}

TEST(StorageDeviceReads, ReadsTheCountersOfABlockDeviceAndNothingElse) {
  EXPECT_FALSE(ReadDeviceReads("").has_value());
  EXPECT_FALSE(ReadDeviceReads("../../etc").has_value());
  EXPECT_FALSE(ReadDeviceReads("no-such-device").has_value());
  for (const fs::directory_entry& e : fs::directory_iterator("/sys/class/block")) {
    EXPECT_TRUE(ReadDeviceReads(e.path().filename().string()).has_value()) << e.path();
    break;  // one is enough
  }
}

// ---- `loadbench probe --storage`: bad input, one line, exit 2, nothing written ----

TEST(ProbeStorageCli, AnUnknownKindIsBadInput) {
  test::TempDir tmp;
  const test::ProcessResult r = test::RunLoadbench(
      {"probe", "--storage", "nosuchfs", "--dir", tmp.File("data"), "--out", tmp.File("out")});
  EXPECT_EQ(r.signal, 0) << test::Describe(r);
  EXPECT_EQ(r.exit_code, 2) << test::Describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << test::Describe(r);
  EXPECT_NE(r.err.find("nosuchfs"), std::string::npos) << test::Describe(r);
  EXPECT_FALSE(fs::exists(tmp.File("out/env.json")));
}

TEST(ProbeStorageCli, AnUnknownOptionIsBadInput) {
  test::TempDir tmp;
  const test::ProcessResult r =
      test::RunLoadbench({"probe", "--storage", "xfs:nosuchoption=1", "--dir", tmp.File("data"),
                          "--out", tmp.File("out")});
  EXPECT_EQ(r.exit_code, 2) << test::Describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << test::Describe(r);
  EXPECT_NE(r.err.find("nosuchoption"), std::string::npos) << test::Describe(r);
}

}  // namespace
}  // namespace loadbench::probe
