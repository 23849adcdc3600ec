// The command-line contract (docs/design.md): bad usage or bad input exits 2 with one line on
// stderr naming the file and the reason, never a signal, and `run` writes nothing for bad input;
// --help works on every subcommand; inspect and list print what they promise. Each test runs
// the built binary (LOADBENCH_BINARY) as a child process.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/cache/cache.h"
#include "harness/launch/request.h"
#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"
#include "tests/support/format_builders.h"
#include "tests/support/machine.h"
#include "tests/support/run_cli.h"
#include "tests/support/special_files.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

using test::Describe;
using test::ProcessResult;
using test::RunLoadbench;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Exit 2, not a signal, and exactly one line on stderr holding every one of `needles`.
void ExpectBadInput(const ProcessResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.signal, 0) << Describe(r);
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  ASSERT_FALSE(r.err.empty()) << Describe(r);
  EXPECT_EQ(r.err.back(), '\n') << Describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line\n" << Describe(r);
  for (const auto& n : needles)
    EXPECT_TRUE(Contains(r.err, n)) << "no '" << n << "'\n" << Describe(r);
}

class CliTest : public ::testing::Test {
 protected:
  // A valid WLF file of OddTensors().
  void SetUp() override {
    valid_ = dir_.File("valid.wlf");
    test::WriteWlfFile(valid_, test::OddTensors(), 64);
  }

  // A copy of the valid file under `name`, for corrupting.
  std::string CopyOfValid(const std::string& name) {
    const std::string path = dir_.File(name);
    test::WriteFileBytes(path, test::ReadFileBytes(valid_));
    return path;
  }

  test::TempDir dir_;
  std::string valid_;
};

// ---- inspect: bad input ----

TEST_F(CliTest, InspectMissingFile) {
  const std::string path = dir_.File("no-such.wlf");
  ExpectBadInput(RunLoadbench({"inspect", path}), {path, "No such file"});
}

TEST_F(CliTest, InspectDirectory) {
  ExpectBadInput(RunLoadbench({"inspect", dir_.path()}), {dir_.path(), "a folder, holding no"});
}

TEST_F(CliTest, InspectEmptyFile) {
  const std::string path = dir_.File("empty.wlf");
  test::WriteFileBytes(path, {});
  ExpectBadInput(RunLoadbench({"inspect", path}), {path, "empty file"});
}

TEST_F(CliTest, InspectTruncated) {
  const std::string path = CopyOfValid("truncated.wlf");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1000);
  ExpectBadInput(RunLoadbench({"inspect", path}), {path, "truncated"});
}

TEST_F(CliTest, InspectWrongMagic) {
  const std::string path = CopyOfValid("magic.wlf");
  test::PatchU32(path, test::kHeaderMagic, 0xDEADBEEF);
  ExpectBadInput(RunLoadbench({"inspect", path}), {path, "unknown format"});
}

TEST_F(CliTest, InspectBigEndianMagicOnALittleEndianFile) {
  // The swapped magic makes the reader take every other field big-endian too, so a little-endian
  // file with only its magic swapped is an invalid big-endian file.
  const std::string path = CopyOfValid("swapped.wlf");
  test::PatchU32(path, test::kHeaderMagic, kWlfMagicSwapped);
  ExpectBadInput(RunLoadbench({"inspect", path}), {path, "invalid big-endian WLF file"});
}

TEST_F(CliTest, InspectCorruptedOffsets) {
  const std::string a = CopyOfValid("tensor-offset.wlf");
  test::PatchU64(a, test::WlfEntryField(5, test::kEntryDataOffset), ~uint64_t{63});
  ExpectBadInput(RunLoadbench({"inspect", a}), {a, "outside the data area"});

  const std::string b = CopyOfValid("data-offset.wlf");
  test::PatchU64(b, test::kHeaderDataOffset, uint64_t{1} << 40);
  ExpectBadInput(RunLoadbench({"inspect", b}), {b, "past the end"});

  const std::string c = CopyOfValid("tensor-count.wlf");
  test::PatchU64(c, test::kHeaderTensorCount, ~uint64_t{0});
  ExpectBadInput(RunLoadbench({"inspect", c}), {c, "tensor_count"});
}

TEST_F(CliTest, InspectJsonBadInputStillExits2) {
  const std::string path = dir_.File("no-such.wlf");
  const ProcessResult r = RunLoadbench({"inspect", "--json", path});
  ExpectBadInput(r, {path});
  EXPECT_TRUE(r.out.empty()) << Describe(r);
}

// ---- run: bad input writes nothing ----

TEST_F(CliTest, RunBadFileCreatesNoResults) {
  const std::string out = dir_.File("results");
  const std::string missing = dir_.File("no-such.wlf");
  ExpectBadInput(RunLoadbench({"run", "--file", missing, "--reps", "1", "--out", out}),
                 {missing, "No such file"});
  EXPECT_FALSE(std::filesystem::exists(out));

  const std::string truncated = CopyOfValid("truncated.wlf");
  std::filesystem::resize_file(truncated, 100);
  ExpectBadInput(RunLoadbench({"run", "--file", truncated, "--strategies", "fread", "--cache",
                               "warm", "--reps", "1", "--out", out}),
                 {truncated, "truncated"});
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(CliTest, RunUnknownStrategy) {
  const std::string out = dir_.File("results");
  ExpectBadInput(RunLoadbench({"run", "--file", valid_, "--strategies", "nosuch", "--out", out}),
                 {"nosuch", "unknown strategy"});
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(CliTest, RunUnknownStrategyOption) {
  const std::string out = dir_.File("results");
  ExpectBadInput(RunLoadbench(
                     {"run", "--file", valid_, "--strategies", "fread:bogus=1", "--out", out}),
                 {"fread", "bogus"});
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(CliTest, RunMalformedStrategyOption) {
  const std::string out = dir_.File("results");
  ExpectBadInput(RunLoadbench({"run", "--file", valid_, "--strategies", "mmap:", "--out", out}),
                 {"mmap"});
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(CliTest, RunBadCacheIsUsageError) {
  const std::string out = dir_.File("results");
  const ProcessResult r =
      RunLoadbench({"run", "--file", valid_, "--cache", "lukewarm", "--out", out});
  EXPECT_EQ(r.signal, 0) << Describe(r);
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "lukewarm")) << Describe(r);
  EXPECT_FALSE(std::filesystem::exists(out));
}

// ---- a model's file or shard that is no regular file: refused at once, never waited on ----

// `args` exits 2 with one line naming `path` as a FIFO, never waiting on it: killed after 20 s,
// so that an open that blocks ends as a signal and fails the test instead of hanging the suite.
// No bound on the time it took: the suite's machine is shared, and a loaded one takes seconds
// to start an ASan binary.
void ExpectFifoRefusedAtOnce(const std::vector<std::string>& args, const std::string& path) {
  ExpectBadInput(RunLoadbench(args, {}, std::chrono::seconds(20)),
                 {path + ": a FIFO (named pipe), not a regular file"});
}

TEST_F(CliTest, AFifoAsTheFileIsRefusedAtOnce) {
  const std::string fifo = dir_.File("fifo.wlf");
  test::MakeFifo(fifo);
  const std::string out = dir_.File("results");
  ExpectFifoRefusedAtOnce({"inspect", fifo}, fifo);
  ExpectFifoRefusedAtOnce({"run", "--file", fifo, "--strategies", "fread", "--cache", "warm",
                           "--reps", "1", "--out", out},
                          fifo);
  EXPECT_FALSE(std::filesystem::exists(out));
  ExpectBadInput(RunLoadbench({"inspect", "/dev/null"}),
                 {"/dev/null: a character device, not a regular file"});
}

TEST_F(CliTest, AFifoShardInAnIndexFolderIsRefusedAtOnce) {
  // The valid file as shard 1 of 2 of an index in a folder of its own; shard 2 is a FIFO.
  const std::string model = dir_.File("model");
  std::filesystem::create_directory(model);
  std::filesystem::copy_file(valid_, model + "/m-00001-of-00002.wlf");
  const std::string fifo = model + "/m-00002-of-00002.wlf";
  test::MakeFifo(fifo);
  nlohmann::json map = {{"extra", "m-00002-of-00002.wlf"}};
  for (const WlfTensorSpec& t : test::OddTensors()) map[t.name] = "m-00001-of-00002.wlf";
  const std::string index = nlohmann::json{{"weight_map", map}}.dump();
  test::WriteFileBytes(model + "/m.wlf.index.json", test::TextBytes(index));
  const std::string out = dir_.File("results");
  ExpectFifoRefusedAtOnce({"inspect", model}, fifo);
  ExpectFifoRefusedAtOnce({"run", "--file", model, "--strategies", "fread", "--cache", "warm",
                           "--reps", "1", "--out", out},
                          fifo);
  EXPECT_FALSE(std::filesystem::exists(out));
}

// ---- gen: bad usage ----

TEST_F(CliTest, GenBadSize) {
  const std::string out = dir_.File("gen.wlf");
  ExpectBadInput(RunLoadbench({"gen", "--size", "abc", "--out", out, "--quiet"}),
                 {"--size", "abc"});
  EXPECT_FALSE(std::filesystem::exists(out));
}

// --shards 0, both sharding flags, more shards than tensors: exit 2, one line, nothing written.
TEST_F(CliTest, GenBadSharding) {
  const std::string out = dir_.File("sharded.wlf");
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"gen", "--size", "2MiB", "--out", out, "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunLoadbench(args);
  };
  ExpectBadInput(gen({"--shards", "0"}), {"--shards", "at least 1 shard"});
  ExpectBadInput(gen({"--shards", "3", "--shard-size", "1MiB"}), {"--shards", "--shard-size"});
  ExpectBadInput(gen({"--shard-size", "0"}), {"--shard-size"});
  ExpectBadInput(gen({"--shard-size", "big"}), {"--shard-size", "big"});
  ExpectBadInput(gen({"--shards", "60000"}), {"shards 60000", "tensors"});
  ExpectBadInput(gen({"--shards", "60000", "--dry-run"}), {"shards 60000", "tensors"});
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(e.path().filename().string().find("sharded"), std::string::npos) << e.path();
  }
}

TEST_F(CliTest, UnknownSubcommandIsUsageError) {
  const ProcessResult r = RunLoadbench({"frobnicate"});
  EXPECT_EQ(r.signal, 0) << Describe(r);
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
}

// ---- --help ----

TEST_F(CliTest, HelpOnEverySubcommand) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"gen",
       {"--preset", "--size", "--format", "--out", "--seed", "--align", "--shards",
        "--shard-size"}},
      {"inspect", {"--json", "file"}},
      {"run", {"--file", "--strategies", "--cache", "--reps", "--out"}},
      {"list", {"strategies"}},
  };
  for (const auto& [cmd, options] : cases) {
    SCOPED_TRACE(cmd);
    const ProcessResult r = RunLoadbench({cmd, "--help"});
    EXPECT_EQ(r.signal, 0) << Describe(r);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    for (const auto& o : options) {
      EXPECT_TRUE(Contains(r.out, o)) << "help of " << cmd << " lacks " << o << "\n" << Describe(r);
    }
  }
  const ProcessResult top = RunLoadbench({"--help"});
  EXPECT_EQ(top.exit_code, 0) << Describe(top);
  for (const char* cmd : {"gen", "inspect", "run", "list"}) {
    EXPECT_TRUE(Contains(top.out, cmd)) << Describe(top);
  }
}

// ---- inspect and list on good input ----

TEST_F(CliTest, InspectValidFile) {
  const ProcessResult r = RunLoadbench({"inspect", valid_});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "wlf")) << Describe(r);
  for (const auto& t : test::OddTensors()) EXPECT_TRUE(Contains(r.out, t.name)) << Describe(r);
  EXPECT_TRUE(r.err.empty()) << Describe(r);
}

TEST_F(CliTest, InspectJson) {
  const ProcessResult r = RunLoadbench({"inspect", "--json", valid_});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << Describe(r);
  EXPECT_EQ(j["format"], "wlf");
  EXPECT_EQ(j["file"], valid_);
  EXPECT_EQ(j["file_bytes"], std::filesystem::file_size(valid_));
  const auto specs = test::OddTensors();
  ASSERT_TRUE(j["tensors"].is_array());
  ASSERT_EQ(j["tensors"].size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(j["tensors"][i]["name"], specs[i].name);
    EXPECT_EQ(j["tensors"][i]["shape"].get<std::vector<uint64_t>>(), specs[i].shape);
  }
  EXPECT_EQ(j["tensors"][5]["dtype"], "i8");
  EXPECT_EQ(j["tensors"][5]["size"], 4097);
}

TEST_F(CliTest, ListShowsEveryStrategyWithOptionsAndSupport) {
  const ProcessResult r = RunLoadbench({"list"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const StrategyInfo* s : Strategies()) {
    EXPECT_TRUE(Contains(r.out, s->name + "\n")) << s->name << "\n" << Describe(r);
  }
  EXPECT_TRUE(Contains(r.out, "supported here")) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "buffer=malloc  (malloc|thp|hugetlb)")) << Describe(r);

  const ProcessResult j = RunLoadbench({"list", "--json"});
  ASSERT_EQ(j.exit_code, 0) << Describe(j);
  const auto all = nlohmann::json::parse(j.out);
  ASSERT_EQ(all.size(), Strategies().size());
  for (size_t i = 0; i < all.size(); ++i) {
    const StrategyInfo* s = Strategies()[i];
    EXPECT_EQ(all[i]["name"], s->name);
    EXPECT_EQ(all[i]["options"].size(), s->options.size()) << s->name;
    EXPECT_EQ(all[i]["supported"].get<bool>(), s->unsupported_reason().empty()) << s->name;
    EXPECT_EQ(all[i]["flags"], FlagNames(s->flags)) << s->name;
  }
}

// ---- cache ----

TEST_F(CliTest, CacheWarmThenDropReachesEachStateAndSaysSo) {
  const ProcessResult warm = RunLoadbench({"cache", "warm", valid_, "--json"});
  ASSERT_EQ(warm.exit_code, 0) << Describe(warm);
  auto j = nlohmann::json::parse(warm.out);
  EXPECT_GE(j["resident"].get<double>(), 0.99);
  EXPECT_TRUE(j["state_reached"].get<bool>());
  if (const std::string why = test::CannotDropCachesReason(); !why.empty()) GTEST_SKIP() << why;
  const ProcessResult drop = RunLoadbench({"cache", "drop", valid_, "--json"});
  ASSERT_EQ(drop.exit_code, 0) << Describe(drop);
  j = nlohmann::json::parse(drop.out);
  EXPECT_LE(j["resident"].get<double>(), 0.01);
  EXPECT_EQ(j["drop_method"], DropsWholeCache() ? "drop_caches" : "fadvise");
  const ProcessResult status = RunLoadbench({"cache", "status", valid_});
  EXPECT_EQ(status.exit_code, 0) << Describe(status);
  EXPECT_TRUE(Contains(status.out, "0.00% resident")) << Describe(status);
}

TEST_F(CliTest, CacheBadInput) {
  const std::string path = dir_.File("no-such.wlf");
  ExpectBadInput(RunLoadbench({"cache", "drop", path}), {path, "No such file"});
  ExpectBadInput(RunLoadbench({"cache", "status", dir_.path()}),
                 {dir_.path(), "a folder, holding no"});
  ExpectBadInput(RunLoadbench({"cache", "evict", valid_}), {"evict"});
}

// ---- worker: one typed request ----

// The worker's request as the runner writes it, for `valid_` read by `spec`.
std::string RequestFor(const std::string& file, const std::string& spec) {
  std::vector<StrategySpec> specs;
  WorkerRequest w;
  w.file = file;
  EXPECT_TRUE(ParseStrategyList(spec, &specs).ok());
  EXPECT_TRUE(ResolveSpec(specs.at(0), &w.strategy).ok());
  return RequestJson(w).dump();
}

TEST_F(CliTest, WorkerLoadsWhatItsRequestSays) {
  const ProcessResult r =
      RunLoadbench({"worker", "--request", RequestFor(valid_, "fread:chunk=4KiB")});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const auto record = nlohmann::json::parse(r.out);
  EXPECT_EQ(record["status"], "ok") << r.out;
  EXPECT_EQ(record["params"]["chunk"], 4096) << r.out;
}

TEST_F(CliTest, WorkerRefusesABrokenRequestNamingWhy) {
  ExpectBadInput(RunLoadbench({"worker", "--request", "{"}), {"worker request", "not a JSON"});
  auto j = nlohmann::ordered_json::parse(RequestFor(valid_, "fread"));
  j["strategy"]["params"]["chunk"] = "big";
  ExpectBadInput(RunLoadbench({"worker", "--request", j.dump()}), {"option chunk"});
  j.erase("pattern");
  j["strategy"]["params"]["chunk"] = 4096;
  ExpectBadInput(RunLoadbench({"worker", "--request", j.dump()}), {"no pattern"});
}

}  // namespace
}  // namespace loadbench
