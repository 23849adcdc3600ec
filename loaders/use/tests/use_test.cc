// After the load, end to end: the built binary loads generated files with use options
// (consume, bind, transform, place, instances, registry) in worker processes, and the records
// show what each costs in memory and that every strategy computed the same thing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "tests/support/generated_model.h"
#include "tests/support/run_cli.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

class UseTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSize = 64u << 20;

  void SetUp() override {
    char tmpl[] = "/var/tmp/loadbench_use_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string Generate(const std::string& name, const std::string& endian = "little") {
    const std::string path = dir_ + "/" + name;
    test::WriteModel({.path = path, .size = kSize, .seed = 5, .endian = endian});
    return path;
  }

  // Runs `strategies` warm, once each, and returns the records by strategy_spec.
  std::map<std::string, nlohmann::json> Run(const std::string& file, const std::string& strategies,
                                            int expect_exit = 0) {
    const std::string out = dir_ + "/r" + std::to_string(++runs_);
    const int rc =
        test::RunLoadbenchInto(dir_, "run --file " + file + " --strategies " + strategies +
                                         " --cache warm --reps 1 --out " + out);
    EXPECT_EQ(rc, expect_exit) << test::ReadWholeFile(dir_ + "/stderr.txt");
    std::map<std::string, nlohmann::json> by_spec;
    for (auto& r : test::ReadRuns(out)) by_spec[r["strategy_spec"]] = r;
    return by_spec;
  }

  static uint64_t Mem(const nlohmann::json& r, const char* key) {
    return r["memory"][key].get<uint64_t>();
  }

  std::string dir_;
  int runs_ = 0;
};

TEST_F(UseTest, ForwardComputesTheSameResultWithEveryStrategy) {
  const std::string file = Generate("m.wlf");
  const std::vector<std::string> specs = {"mmap:consume=forward",
                                          "mmap_seq:consume=forward",
                                          "mmap_populate_read:consume=forward",
                                          "fread:consume=forward",
                                          "io_uring:consume=forward",
                                          "pread_mt:consume=forward",
                                          "layered:consume=forward",
                                          "mmap:consume=forward:bind=copy",
                                          "mmap:consume=forward:unaligned=copy",
                                          "layered:consume=forward:bind=copy"};
  std::string list;
  for (const auto& s : specs) list += (list.empty() ? "" : ",") + s;
  auto runs = Run(file, list);
  ASSERT_EQ(runs.size(), specs.size());
  const std::string result = runs["mmap:consume=forward"]["consume_result"];
  for (const auto& s : specs) {
    const auto& r = runs[s];
    ASSERT_EQ(r["status"], "ok") << s << ": " << r["error"];
    EXPECT_EQ(r["checksum_ok"], true) << s;
    EXPECT_EQ(r["consume_result"], result) << s;
    EXPECT_EQ(r["use"]["consume"], "forward") << s;
    EXPECT_EQ(r["verify"], r["strategy"] == "layered" ? "per-layer" : "after") << s;
    const double first = r["first_use_s"], wall = r["wall_s"], ready = r["ready_s"];
    EXPECT_GT(first, 0) << s;
    EXPECT_LE(first, wall) << s;
    if (r["strategy"] != "layered") {
      EXPECT_LE(ready, first) << s;
    }
  }
  // The checksum consumer's result is the file's checksum; random's differs from forward's
  // and does not depend on its order.
  auto other = Run(file, "mmap,mmap:consume=random,fread:consume=random:seed=9");
  EXPECT_EQ(other["mmap"]["verify"], "consumer");
  EXPECT_NE(other["mmap"]["consume_result"], result);
  EXPECT_EQ(other["mmap:consume=random"]["verify"], "after");
  EXPECT_NE(other["mmap:consume=random"]["consume_result"], result);
  EXPECT_EQ(other["mmap:consume=random"]["consume_result"],
            other["fread:consume=random:seed=9"]["consume_result"]);
}

TEST_F(UseTest, ViewBindingAllocatesNothingAndCopyDoublesAnonymousMemory) {
  const std::string file = Generate("m.wlf");
  auto runs = Run(file, "mmap,mmap:bind=copy,fread,fread:bind=copy");
  const uint64_t bytes = runs["mmap"]["tensor_bytes"];
  for (auto& [spec, r] : runs) ASSERT_EQ(r["status"], "ok") << spec << ": " << r["error"];
  // A view into the mapping: the file's pages, no anonymous copy of them (what the worker held
  // before the load, sanitizer shadow included, bounds the anonymous memory it ends with).
  EXPECT_LT(Mem(runs["mmap"], "rss_anon_bytes"),
            runs["mmap"]["start_rss_bytes"].get<uint64_t>() + bytes / 4);
  EXPECT_GE(Mem(runs["mmap"], "rss_file_bytes"), bytes * 95 / 100);
  // Copied: every tensor once more, in anonymous memory.
  EXPECT_GE(Mem(runs["mmap:bind=copy"], "rss_anon_bytes"),
            Mem(runs["mmap"], "rss_anon_bytes") + bytes * 95 / 100);
  EXPECT_GE(Mem(runs["fread:bind=copy"], "rss_anon_bytes"),
            Mem(runs["fread"], "rss_anon_bytes") + bytes * 95 / 100);
  EXPECT_GT(runs["mmap:bind=copy"]["bind_s"].get<double>(), 0);
  EXPECT_TRUE(runs["mmap"]["bind_s"].is_null());
}

TEST_F(UseTest, InstancesShareOneMappingThroughTheRegistry) {
  const std::string file = Generate("m.wlf");
  auto runs = Run(file, "mmap:instances=2,mmap:instances=2:registry=off");
  const auto& on = runs["mmap:instances=2"];
  const auto& off = runs["mmap:instances=2:registry=off"];
  ASSERT_EQ(on["status"], "ok") << on["error"];
  ASSERT_EQ(off["status"], "ok") << off["error"];
  const uint64_t bytes = on["tensor_bytes"];
  EXPECT_EQ(on["loads"], 1);
  EXPECT_EQ(off["loads"], 2);
  // Two mappings of the same pages count twice in RSS.
  EXPECT_GE(Mem(off, "rss_file_bytes"), bytes * 19 / 10);
  EXPECT_GE(Mem(off, "rss_file_bytes"), Mem(on, "rss_file_bytes") + bytes * 9 / 10);
}

// The check and the release are outside wall_s for every strategy, layered's per-layer ones
// included: each is timed as its own phase.
TEST_F(UseTest, VerificationAndTeardownAreTimedPhasesOutsideTheLoad) {
  const std::string file = Generate("m.wlf");
  auto runs = Run(file, "layered:consume=forward,mmap:consume=forward,fread");
  for (const auto& [spec, r] : runs) {
    ASSERT_EQ(r["status"], "ok") << r.dump();
    EXPECT_GT(r["teardown_s"].get<double>(), 0) << spec;
    EXPECT_GE(r["wall_s"].get<double>(), r["consume_s"].get<double>()) << spec;
    // The worker's life holds the load, the check and the teardown, one after another.
    const double verify = r["verify_s"].is_null() ? 0 : r["verify_s"].get<double>();
    EXPECT_GT(r["process_s"].get<double>(),
              r["wall_s"].get<double>() + verify + r["teardown_s"].get<double>())
        << spec;
  }
  // The checksum consumer is the check itself; the forward consumer needs one of its own.
  EXPECT_EQ(runs["fread"]["verify"], "consumer");
  EXPECT_TRUE(runs["fread"]["verify_s"].is_null());
  EXPECT_EQ(runs["layered:consume=forward"]["verify"], "per-layer");
  EXPECT_EQ(runs["mmap:consume=forward"]["verify"], "after");
  for (const char* spec : {"layered:consume=forward", "mmap:consume=forward"}) {
    EXPECT_GT(runs[spec]["verify_s"].get<double>(), 0) << spec;
  }
}

// mmap_prefetch's figures are read when the load is complete, not when Load returned: at 1 MB/s
// its thread is still walking the file then, and has been for as long as the consumer ran.
TEST_F(UseTest, PrefetchDetailsAreTakenWhenTheLoadIsComplete) {
  const std::string file = Generate("m.wlf");
  auto runs = Run(file, "mmap_prefetch:rate=1");
  const auto& r = runs["mmap_prefetch:rate=1"];
  ASSERT_EQ(r["status"], "ok") << r.dump();
  EXPECT_EQ(r["details"]["prefetch_finished"], false) << r.dump();
  EXPECT_GE(r["details"]["prefetch_s"].get<double>(), r["consume_s"].get<double>()) << r.dump();
  EXPECT_GE(r["details"]["prefetch_pages_touched"].get<uint64_t>(), 1u) << r.dump();
}

TEST_F(UseTest, LayeredHoldsOneLayerAtATime) {
  const std::string file = Generate("m.wlf");
  auto runs = Run(file, "layered:consume=forward,mmap:consume=forward");
  const auto& layered = runs["layered:consume=forward"];
  ASSERT_EQ(layered["status"], "ok") << layered["error"];
  const uint64_t largest = layered["details"]["largest_group_bytes"];
  const uint64_t bytes = layered["tensor_bytes"];
  EXPECT_GT(layered["details"]["groups_mapped"].get<uint64_t>(), 10u);
  EXPECT_LT(2 * largest, bytes);  // so that the bound below says something
  // Beyond what the worker held before the load (binary, libraries, sanitizer shadow), at
  // most two layers' worth: the one in use and what read-ahead brought of the next.
  const auto& mmap = runs["mmap:consume=forward"];
  const uint64_t added =
      layered["peak_rss_bytes"].get<uint64_t>() - layered["start_rss_bytes"].get<uint64_t>();
  EXPECT_LT(added, 2 * largest);
  EXPECT_GE(mmap["peak_rss_bytes"].get<uint64_t>(), bytes);
}

TEST_F(UseTest, InPlaceTransformCopiesOnWriteAndLeavesTheFileAlone) {
  const std::string le = Generate("le.wlf");
  const std::string be = Generate("be.wlf", "big");
  auto file_hash = [](const std::string& path) {
    TensorTable t;
    EXPECT_TRUE(ReadTensorTableFromPath(path, &t).ok());
    UniqueFd fd;
    EXPECT_TRUE(OpenReadOnly(path, 0, &fd).ok());
    uint64_t h = 0;
    EXPECT_TRUE(
        ChecksumFile(FileSource(fd.get(), path, std::filesystem::file_size(path)), t, &h).ok());
    return h;
  };
  const uint64_t before = file_hash(be);
  const auto reference = Run(le, "mmap:consume=forward")["mmap:consume=forward"];
  auto runs = Run(be, "mmap:consume=forward:transform=byteswap:place=inplace,"
                      "mmap:consume=forward:transform=byteswap:place=separate,"
                      "fread:consume=forward:transform=byteswap:place=inplace,"
                      "layered:consume=forward:transform=byteswap:place=inplace");
  EXPECT_EQ(file_hash(be), before);
  for (auto& [spec, r] : runs) {
    ASSERT_EQ(r["status"], "ok") << spec << ": " << r["error"];
    EXPECT_EQ(r["checksum_ok"], true) << spec;
    EXPECT_EQ(r["verify"], "transform") << spec;
    // Converted, the big-endian file computes what the little-endian one of its seed does.
    EXPECT_EQ(r["consume_result"], reference["consume_result"]) << spec;
    EXPECT_EQ(r["transformed_bytes"], r["tensor_bytes"]) << spec;
  }
  const auto& inplace = runs["mmap:consume=forward:transform=byteswap:place=inplace"];
  const auto& separate = runs["mmap:consume=forward:transform=byteswap:place=separate"];
  const uint64_t bytes = inplace["tensor_bytes"];
  // Every written page of the private mapping became a private copy.
  EXPECT_GE(Mem(inplace, "private_dirty_bytes"), bytes * 95 / 100);
  EXPECT_GE(Mem(inplace, "rss_anon_bytes"), bytes * 95 / 100);
  // Separate: the mapping stays clean file pages (in place, they were replaced by the copies);
  // the output is new anonymous memory.
  EXPECT_GE(Mem(separate, "rss_file_bytes"), Mem(inplace, "rss_file_bytes") + bytes * 9 / 10);
  EXPECT_GE(Mem(separate, "rss_anon_bytes"), bytes * 95 / 100);
}

TEST_F(UseTest, CombinationsThatCannotWorkAreUnsupportedWithTheirReason) {
  const std::string le = Generate("le.wlf");
  const std::string be = Generate("be.wlf", "big");
  auto a = Run(le, "mmap:transform=bf16_to_f32:place=inplace,layered:instances=2,"
                   "mmap:transform=byteswap");
  EXPECT_EQ(a["mmap:transform=bf16_to_f32:place=inplace"]["status"], "unsupported");
  EXPECT_NE(a["mmap:transform=bf16_to_f32:place=inplace"]["error"].get<std::string>().find(
                "widening"),
            std::string::npos);
  EXPECT_EQ(a["layered:instances=2"]["status"], "unsupported");
  EXPECT_EQ(a["mmap:transform=byteswap"]["status"], "unsupported");
  EXPECT_NE(a["mmap:transform=byteswap"]["error"].get<std::string>().find("little-endian"),
            std::string::npos);
  auto b = Run(be, "mmap:consume=forward,shm:transform=byteswap:place=inplace,mmap");
  EXPECT_EQ(b["mmap:consume=forward"]["status"], "unsupported");
  EXPECT_NE(b["mmap:consume=forward"]["error"].get<std::string>().find("big-endian"),
            std::string::npos);
  EXPECT_EQ(b["shm:transform=byteswap:place=inplace"]["status"], "unsupported");
  // The checksum consumer needs no byte order: the bytes as stored verify.
  EXPECT_EQ(b["mmap"]["status"], "ok") << b["mmap"]["error"];
  EXPECT_EQ(b["mmap"]["checksum_ok"], true);
}

TEST_F(UseTest, AnUnknownUseOptionIsBadInputNamingTheCommonOptions) {
  const std::string file = Generate("m.wlf");
  const auto r = test::RunLoadbench({"run", "--file", file, "--strategies", "mmap:consum=x",
                                     "--cache", "warm", "--reps", "1", "--out", dir_ + "/bad"});
  EXPECT_EQ(r.exit_code, 2) << test::Describe(r);
  EXPECT_NE(r.err.find("consume"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loadbench
