// Generated shards: the split, the names, the index or GGUF split keys, every shard a complete
// file with its own checksum, the model the same as the unsharded file of the same spec; the
// front ends (gen --shards/--shard-size, [[file]] shards/shard_size).
#include "harness/gen/shards.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/gen/generator.h"
#include "harness/process/interrupt.h"
#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/format/model.h"
#include "tests/support/run_cli.h"
#include "tests/support/sharded_model.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

bool HasTempFiles(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

size_t FileCount(const std::string& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TensorTable Table(const std::string& path) {
  TensorTable t;
  const Status s = ReadTensorTableFromPath(path, &t);
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

uint64_t OwnChecksum(const std::string& path, const TensorTable& t) {
  UniqueFd fd;
  EXPECT_TRUE(OpenReadOnly(path, 0, &fd).ok());
  uint64_t sum = 0;
  const Status s =
      ChecksumFile(FileSource(fd.get(), path, std::filesystem::file_size(path)), t, &sum);
  EXPECT_TRUE(s.ok()) << s.message();
  return sum;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
}

GenOptions Base(const std::string& out, const std::string& format) {
  GenOptions o;
  o.preset = "llama";
  o.size_bytes = 2ull << 20;
  o.format = format;
  o.out_path = out;
  o.seed = 7;
  o.threads = 2;
  return o;
}

// ---- the split ----

TEST(ShardSplitTest, ByCountBalancesBytesContiguously) {
  const std::vector<uint64_t> sizes = {100, 100, 100, 100, 100, 100, 100, 100, 100};
  std::vector<GenShard> s;
  ASSERT_TRUE(SplitByCount(sizes, 3, &s).ok());
  ASSERT_EQ(s.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(s[k].first_tensor, 3 * k);
    EXPECT_EQ(s[k].tensor_count, 3u);
    EXPECT_EQ(s[k].tensor_bytes, 300u);
  }
  // One huge tensor: every shard still holds at least one, in order, covering all.
  ASSERT_TRUE(SplitByCount({10, 1000000, 10, 10, 10}, 4, &s).ok());
  ASSERT_EQ(s.size(), 4u);
  size_t next = 0;
  for (const GenShard& g : s) {
    EXPECT_EQ(g.first_tensor, next);
    EXPECT_GE(g.tensor_count, 1u);
    next += g.tensor_count;
  }
  EXPECT_EQ(next, 5u);
  ASSERT_TRUE(SplitByCount({1, 2, 3}, 3, &s).ok());
  EXPECT_EQ(s.size(), 3u);

  Status st = SplitByCount({1, 2, 3}, 4, &s);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_NE(st.message().find("only 3 tensors"), std::string::npos) << st.message();
  EXPECT_EQ(SplitByCount({1, 2, 3}, 0, &s).code(), Status::Code::kBadInput);
}

TEST(ShardSplitTest, BySizeAsMaxShardSize) {
  std::vector<GenShard> s;
  // 40+40 fit in 100, the third would pass it; 500 is alone; 30+30+30 fit.
  ASSERT_TRUE(SplitBySize({40, 40, 40, 500, 30, 30, 30}, 100, &s).ok());
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].tensor_count, 2u);
  EXPECT_EQ(s[1].tensor_count, 1u);
  EXPECT_EQ(s[2].tensor_count, 1u);
  EXPECT_EQ(s[2].tensor_bytes, 500u);
  EXPECT_EQ(s[3].tensor_count, 3u);
  ASSERT_TRUE(SplitBySize({40, 40}, 1000, &s).ok());
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(SplitBySize({40}, 0, &s).code(), Status::Code::kBadInput);
}

TEST(ShardSplitTest, Names) {
  EXPECT_EQ(ShardPath("/d/model.safetensors", "safetensors", 0, 3),
            "/d/model-00001-of-00003.safetensors");
  EXPECT_EQ(ShardPath("/d/m.v2.gguf", "gguf", 11, 16), "/d/m.v2-00012-of-00016.gguf");
  EXPECT_EQ(ShardPath("/d/model", "wlf", 0, 2), "/d/model-00001-of-00002.wlf");
  EXPECT_EQ(IndexPath("/d/model.safetensors"), "/d/model.safetensors.index.json");
}

// ---- sharded generation ----

struct Sharding {
  uint64_t shards = 0, shard_size = 0;
};

// Generates the sharded model of `o` with `how` and checks it against the unsharded file
// `ref` (its result `rr`): names, the index or split keys, every shard's checksum, the model's.
void CheckSharded(const GenOptions& unsharded, const GenResult& rr, Sharding how) {
  GenOptions o = unsharded;
  o.out_path = (fs::path(unsharded.out_path).parent_path() / "model").string() + "." + o.format;
  o.shards = how.shards;
  o.shard_size = how.shard_size;
  GenPlan plan;
  ASSERT_TRUE(PlanGenerated(o, &plan).ok());
  const size_t n = plan.shards.size();
  if (how.shards != 0) {
    EXPECT_EQ(n, how.shards);
  }
  ASSERT_GE(n, 2u);
  GenResult r;
  const Status s = Generate(o, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(r.reused);
  EXPECT_EQ(r.shard_count, n);
  EXPECT_EQ(r.checksum, rr.checksum) << "the model's checksum is the unsharded file's";
  EXPECT_EQ(r.tensor_count, rr.tensor_count);
  EXPECT_EQ(r.tensor_bytes, rr.tensor_bytes);
  EXPECT_EQ(r.model_path, ModelPath(o));
  EXPECT_EQ(r.model_path, plan.model_path);
  const std::string dir = fs::path(o.out_path).parent_path().string();
  const std::string ext = o.format;
  if (o.format == "gguf") {
    EXPECT_EQ(r.model_path, dir + "/" + ShardFileName("model", 0, n, ext));
  } else {
    EXPECT_EQ(r.model_path, o.out_path + ".index.json");
  }
  EXPECT_FALSE(fs::exists(o.out_path)) << "the out path itself is not written";

  // Every shard: a complete file of its format, its own checksum stored, its slice of the
  // unsharded file's tensors in order.
  const TensorTable whole = Table(unsharded.out_path);
  std::vector<TensorTable> tables;
  uint64_t file_bytes = 0;
  size_t next = 0;
  for (size_t k = 0; k < n; ++k) {
    const std::string path = dir + "/" + ShardFileName("model", k, n, ext);
    ASSERT_EQ(r.files.at(k), path);
    const TensorTable t = Table(path);
    EXPECT_EQ(t.format, o.format);
    ASSERT_TRUE(t.expected_checksum.has_value()) << path;
    EXPECT_EQ(*t.expected_checksum, OwnChecksum(path, t)) << path;
    EXPECT_EQ(t.header.value("gen_spec_id", ""), Hex(plan.spec_id)) << path;
    EXPECT_EQ(t.file_size, fs::file_size(path));
    file_bytes += t.file_size;
    for (const TensorInfo& ti : t.tensors) {
      ASSERT_LT(next, whole.tensors.size());
      const TensorInfo& w = whole.tensors[next++];
      EXPECT_EQ(ti.name, w.name);
      EXPECT_EQ(ti.dtype, w.dtype);
      EXPECT_EQ(ti.shape, w.shape);
      EXPECT_EQ(ti.size, w.size);
    }
    if (how.shard_size != 0 && t.tensors.size() > 1) {
      EXPECT_LE(t.tensor_bytes, how.shard_size);
    }
    if (how.shard_size != 0 && k + 1 < n) {
      // Greedy: the next shard's first tensor did not fit in this one.
      EXPECT_GT(t.tensor_bytes + whole.tensors[next].size, how.shard_size);
    }
    if (o.format == "gguf") {
      const auto& m = t.header["metadata"];
      EXPECT_EQ(m.value("split.no", -1), static_cast<int>(k));
      EXPECT_EQ(m.value("split.count", -1), static_cast<int>(n));
      EXPECT_EQ(m.value("split.tensors.count", -1), static_cast<int>(whole.tensors.size()));
      EXPECT_EQ(m.contains("loadbench.model_xxh3_64"), k == 0);
      if (k == 0) {
        EXPECT_EQ(m.value("loadbench.model_xxh3_64", ""), Hex(rr.checksum));
      }
    }
    tables.push_back(t);
  }
  EXPECT_EQ(next, whole.tensors.size());
  TensorTable joined;
  ASSERT_TRUE(JoinShards(tables, &joined).ok());
  EXPECT_EQ(test::PreadModelChecksum(joined), rr.checksum);

  if (o.format != "gguf") {
    const nlohmann::json index = ReadJson(r.model_path);
    ASSERT_TRUE(index.is_object()) << r.model_path;
    EXPECT_EQ(index["metadata"]["total_size"], rr.tensor_bytes);
    EXPECT_EQ(index["metadata"]["loadbench.xxh3_64"], Hex(rr.checksum));
    EXPECT_EQ(index["metadata"]["loadbench.gen_spec"], Hex(plan.spec_id));
    const nlohmann::json& map = index["weight_map"];
    EXPECT_EQ(map.size(), whole.tensors.size()) << "every tensor once";
    for (size_t k = 0; k < n; ++k) {
      for (const TensorInfo& ti : tables[k].tensors) {
        EXPECT_EQ(map.value(ti.name, ""), ShardFileName("model", k, n, ext)) << ti.name;
      }
    }
    file_bytes += fs::file_size(r.model_path);
    EXPECT_EQ(r.files.back(), r.model_path);
  }
  EXPECT_EQ(r.file_bytes, file_bytes);
  EXPECT_EQ(plan.total_bytes, file_bytes);
  EXPECT_FALSE(HasTempFiles(dir));

  // The model as a reader takes it: the unsharded file's tensors and checksum.
  TensorTable model;
  const Status ms = ReadModel(r.model_path, &model);
  ASSERT_TRUE(ms.ok()) << ms.message();
  ASSERT_EQ(model.tensors.size(), whole.tensors.size());
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    EXPECT_EQ(model.tensors[i].name, whole.tensors[i].name);
  }
  EXPECT_EQ(model.shards.size(), n);
  ASSERT_TRUE(model.expected_checksum.has_value());
  EXPECT_EQ(*model.expected_checksum, rr.checksum);

  // Generated again: every file reused, none touched.
  struct stat before {};
  ASSERT_EQ(::stat(r.files.back().c_str(), &before), 0);
  GenResult again;
  ASSERT_TRUE(Generate(o, &again).ok());
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(again.checksum, rr.checksum);
  EXPECT_EQ(again.file_bytes, r.file_bytes);
  EXPECT_EQ(again.model_path, r.model_path);
  struct stat after {};
  ASSERT_EQ(::stat(r.files.back().c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);

  for (const std::string& f : r.files) fs::remove(f);
}

TEST(GeneratorShardTest, EveryFormatByCountAndBySize) {
  for (const char* format : {"wlf", "safetensors", "gguf"}) {
    SCOPED_TRACE(format);
    test::TempDir dir;
    GenOptions o = Base(dir.File(std::string("whole.") + format), format);
    GenResult rr;
    ASSERT_TRUE(Generate(o, &rr).ok());
    {
      SCOPED_TRACE("--shards 3");
      CheckSharded(o, rr, {3, 0});
    }
    {
      SCOPED_TRACE("--shard-size 256KiB");
      CheckSharded(o, rr, {0, 256 << 10});
    }
    EXPECT_EQ(FileCount(dir.path()), 1u);
  }
}

// Many small tensors across 8 MiB chunks, f16, a shard boundary inside a chunk's range.
TEST(GeneratorShardTest, MoeWithManyTensors) {
  test::TempDir dir;
  GenOptions o = Base(dir.File("whole.safetensors"), "safetensors");
  o.preset = "moe";
  o.size_bytes = 20ull << 20;
  o.dtype = "f16";
  o.misalign = 2;
  GenResult rr;
  ASSERT_TRUE(Generate(o, &rr).ok());
  CheckSharded(o, rr, {5, 0});
}

TEST(GeneratorShardTest, SpecIdHoldsTheSharding) {
  std::set<uint64_t> ids;
  for (uint64_t n : {0, 1, 4, 16}) {
    GenOptions o = Base("unused.wlf", "wlf");
    o.shards = n;
    GenPlan p;
    ASSERT_TRUE(PlanGenerated(o, &p).ok());
    EXPECT_EQ(p.shards.size(), n);
    ids.insert(p.spec_id);
  }
  GenOptions o = Base("unused.wlf", "wlf");
  o.shard_size = 1 << 20;
  GenPlan p;
  ASSERT_TRUE(PlanGenerated(o, &p).ok());
  ids.insert(p.spec_id);
  EXPECT_EQ(ids.size(), 5u);
  // Unsharded, the spec id is as before sharding existed.
  o = Base("unused.wlf", "wlf");
  ASSERT_TRUE(PlanGenerated(o, &p).ok());
  const std::string spec = "loadbench-gen v1 format=wlf preset=llama size=2097152 dtype=bf16 "
                           "align=4096 seed=7";
  EXPECT_EQ(p.spec_id, XXH3_64bits(spec.data(), spec.size()));
}

// 1, 4 and 16 shards of one spec live in one folder under their own --out names.
TEST(GeneratorShardTest, ShardCountsCoexist) {
  test::TempDir dir;
  std::vector<GenResult> rs;
  for (uint64_t n : {1, 4, 16}) {
    GenOptions o = Base(dir.File(fmt::format("m{}.safetensors", n)), "safetensors");
    o.shards = n;
    GenResult r;
    ASSERT_TRUE(Generate(o, &r).ok());
    EXPECT_EQ(r.shard_count, n);
    rs.push_back(r);
  }
  for (uint64_t n : {1, 4, 16}) {
    GenOptions o = Base(dir.File(fmt::format("m{}.safetensors", n)), "safetensors");
    o.shards = n;
    GenResult r;
    ASSERT_TRUE(Generate(o, &r).ok());
    EXPECT_TRUE(r.reused) << n;
    EXPECT_EQ(r.checksum, rs[0].checksum);
  }
  EXPECT_EQ(FileCount(dir.path()), 1 + 1 + 4 + 1 + 16 + 1u);
}

TEST(GeneratorShardTest, BadShardingIsBadInput) {
  test::TempDir dir;
  GenOptions o = Base(dir.File("m.wlf"), "wlf");
  o.shards = 3;
  o.shard_size = 1 << 20;
  GenResult r;
  Status s = Generate(o, &r);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("exclude each other"), std::string::npos) << s.message();
  o.shard_size = 0;
  o.shards = 100000;
  s = Generate(o, &r);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  o.shards = 60000;  // more than the tensors
  s = Generate(o, &r);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("tensors"), std::string::npos) << s.message();
  // A shard's name taken by a folder: refused before anything is written.
  o.shards = 3;
  fs::create_directory(dir.File("m-00002-of-00003.wlf"));
  s = Generate(o, &r);
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_NE(s.message().find("m-00002-of-00003.wlf"), std::string::npos) << s.message();
  EXPECT_EQ(FileCount(dir.path()), 1u);
}

// Interruption is process-global and cannot be undone, so it is tested in a child process.
TEST(GeneratorShardTest, InterruptedLeavesNothing) {
  test::TempDir dir;
  GenOptions o = Base(dir.File("m.gguf"), "gguf");
  o.shards = 3;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InstallInterruptHandlers();
    ::raise(SIGINT);
    GenResult r;
    const Status st = Generate(o, &r);
    ::_exit(!st.ok() && st.message() == "interrupted" ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(FileCount(dir.path()), 0u);
}

// ---- the front ends ----

TEST(GeneratorShardTest, GenCommandWritesAndPlansShards) {
  test::TempDir dir;
  const std::string out = dir.File("m.safetensors");
  test::ProcessResult r = test::RunLoadbench({"gen", "--size", "2MiB", "--out", out, "--format",
                                              "safetensors", "--shards", "3", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << test::Describe(r);
  EXPECT_NE(r.out.find("3 shards of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("m-00003-of-00003.safetensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model: " + out + ".index.json"), std::string::npos) << r.out;
  EXPECT_EQ(FileCount(dir.path()), 0u);

  r = test::RunLoadbench({"gen", "--size", "2MiB", "--out", dir.File("m.gguf"), "--format", "gguf",
                          "--shard-size", "512KiB", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << test::Describe(r);
  EXPECT_EQ(r.out.rfind(dir.File("m-00001-of-"), 0), 0u) << "starts with the model path\n" << r.out;
  EXPECT_NE(r.out.find(" shards, "), std::string::npos) << r.out;
}

class ShardExperimentTest : public ::testing::Test {
 protected:
  Status Load(const std::string& file_keys, Experiment* e) {
    const std::string path = dir_.File("e.toml");
    std::ofstream(path) << "[[file]]\npreset = \"llama\"\nsize = \"2MiB\"\n"
                        << file_keys << "\n[[strategy]]\nname = \"pread\"\n";
    return LoadExperiment(path, dir_.File("data"), e);
  }
  test::TempDir dir_;
};

TEST_F(ShardExperimentTest, FileKeysShardTheModelAndRunTheModelPath) {
  Experiment e;
  Status s = Load("shards = 4", &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.files.size(), 1u);
  EXPECT_EQ(e.files[0].gen.shards, 4u);
  EXPECT_EQ(e.files[0].gen.out_path, dir_.File("data/llama-2MiB-bf16-s0-shards4.wlf"));
  EXPECT_EQ(e.files[0].path, dir_.File("data/llama-2MiB-bf16-s0-shards4.wlf.index.json"));
  EXPECT_EQ(e.files[0].path, ModelPath(e.files[0].gen));
  GenPlan plan;
  ASSERT_TRUE(PlanGenerated(e.files[0].gen, &plan).ok());
  EXPECT_EQ(e.files[0].file_bytes, plan.total_bytes);

  s = Load("format = \"gguf\"\nshard_size = \"512KiB\"", &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.files[0].gen.shard_size, 512u << 10);
  ASSERT_TRUE(PlanGenerated(e.files[0].gen, &plan).ok());
  EXPECT_EQ(e.files[0].path, dir_.File("data/" + ShardFileName("llama-2MiB-bf16-s0-shard512KiB", 0,
                                                               plan.shards.size(), "gguf")));

  s = Load("", &e);  // unsharded: named as before
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.files[0].path, dir_.File("data/llama-2MiB-bf16-s0.wlf"));
}

TEST_F(ShardExperimentTest, BadShardKeysNameTheLine) {
  Experiment e;
  for (const auto& [keys, words] : std::vector<std::pair<std::string, std::string>>{
           {"shards = 0", "shards = 0 is out of range"},
           {"shards = \"4\"", "shards must be an integer"},
           {"shard_size = \"lots\"", "shard_size"},
           {"shards = 2\nshard_size = \"1MiB\"", "exclude each other"},
           {"shards = 60000", "tensors"}}) {
    const Status s = Load(keys, &e);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << keys;
    EXPECT_NE(s.message().find(dir_.File("e.toml") + ":"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace loadbench
