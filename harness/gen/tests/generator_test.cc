#include "harness/gen/generator.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/gen/presets.h"
#include "harness/process/interrupt.h"
#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "tests/support/run_cli.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/loadbench_gen_test.XXXXXX";
    char* p = ::mkdtemp(tmpl);
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

bool HasTempFiles(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

GenOptions Small(const std::string& out, uint64_t seed = 1) {
  GenOptions o;
  o.preset = "llama";
  o.size_bytes = 2ull << 20;
  o.out_path = out;
  o.seed = seed;
  o.threads = 3;
  return o;
}

// ---- FillTensorBytes ----

TEST(GeneratorFillTest, ChunkIndependent) {
  for (WlfDType dt : {WlfDType::kBF16, WlfDType::kF16}) {
    const size_t n = 1000;  // not a multiple of 8
    std::vector<std::byte> whole(n), pieces(n);
    FillTensorBytes(7, 3, dt, 0, whole.data(), n);
    // Uneven, even-sized pieces, not aligned to 8 bytes.
    const size_t cuts[] = {0, 2, 6, 14, 16, 18, 100, 102, 610, 998, 1000};
    for (size_t i = 0; i + 1 < std::size(cuts); ++i) {
      FillTensorBytes(7, 3, dt, cuts[i], pieces.data() + cuts[i], cuts[i + 1] - cuts[i]);
    }
    EXPECT_EQ(whole, pieces);
    // An offset window matches too.
    std::vector<std::byte> mid(30);
    FillTensorBytes(7, 3, dt, 506, mid.data(), mid.size());
    EXPECT_EQ(0, std::memcmp(mid.data(), whole.data() + 506, mid.size()));
  }
}

TEST(GeneratorFillTest, DependsOnSeedAndTensor) {
  std::vector<std::byte> a(256), b(256), c(256);
  FillTensorBytes(1, 0, WlfDType::kBF16, 0, a.data(), a.size());
  FillTensorBytes(2, 0, WlfDType::kBF16, 0, b.data(), b.size());
  FillTensorBytes(1, 1, WlfDType::kBF16, 0, c.data(), c.size());
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
}

TEST(GeneratorFillTest, ValuesAreFiniteAndVaried) {
  const size_t n = 1 << 16;
  std::vector<uint16_t> v(n);
  FillTensorBytes(42, 5, WlfDType::kBF16, 0, reinterpret_cast<std::byte*>(v.data()), n * 2);
  size_t neg = 0;
  std::vector<int> exps(256, 0);
  for (uint16_t x : v) {
    const int e = (x >> 7) & 0xFF;
    ASSERT_NE(e, 0xFF) << "bf16 NaN/Inf";
    ASSERT_NE(e, 0) << "bf16 zero/subnormal";
    exps[e]++;
    neg += x >> 15;
  }
  EXPECT_GT(neg, n / 3);
  EXPECT_LT(neg, 2 * n / 3);
  int distinct = 0;
  for (int c : exps) distinct += c > 0;
  EXPECT_GE(distinct, 8);

  FillTensorBytes(42, 5, WlfDType::kF16, 0, reinterpret_cast<std::byte*>(v.data()), n * 2);
  for (uint16_t x : v) {
    const int e = (x >> 10) & 0x1F;
    ASSERT_NE(e, 0x1F) << "f16 NaN/Inf";
    ASSERT_NE(e, 0);
  }
}

// ---- Generate ----

TEST(GeneratorTest, DeterministicAndChecksumMatchesContent) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string a = dir.path() + "/a.wlf", b = dir.path() + "/b.wlf", c = dir.path() + "/c.wlf";
  GenResult ra, rb, rc;
  ASSERT_TRUE(Generate(Small(a, 1), &ra).ok());
  GenOptions ob = Small(b, 1);
  ob.threads = 1;  // a different thread count must not change the bytes
  ASSERT_TRUE(Generate(ob, &rb).ok());
  ASSERT_TRUE(Generate(Small(c, 2), &rc).ok());
  EXPECT_FALSE(ra.reused);
  EXPECT_EQ(ra.checksum, rb.checksum);
  EXPECT_NE(ra.checksum, rc.checksum);
  EXPECT_EQ(ReadAll(a), ReadAll(b));
  EXPECT_EQ(ra.file_bytes, fs::file_size(a));
  EXPECT_GT(ra.tensor_count, 0u);
  EXPECT_LE(ra.tensor_bytes, 2ull << 20);
  EXPECT_FALSE(ra.description.empty());

  // The stored checksum equals an independent hash of the tensor bytes read back.
  TensorTable t;
  ASSERT_TRUE(ReadTensorTableFromPath(a, &t).ok());
  ASSERT_TRUE(t.expected_checksum.has_value());
  EXPECT_EQ(*t.expected_checksum, ra.checksum);
  EXPECT_EQ(t.tensors.size(), ra.tensor_count);
  EXPECT_EQ(t.tensor_bytes, ra.tensor_bytes);
  int fd = ::open(a.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  std::vector<char> buf;
  for (const auto& ti : t.tensors) {
    buf.resize(ti.size);
    ASSERT_EQ(::pread(fd, buf.data(), ti.size, static_cast<off_t>(ti.offset)),
              static_cast<ssize_t>(ti.size));
    XXH3_64bits_update(st, buf.data(), buf.size());
  }
  EXPECT_EQ(XXH3_64bits_digest(st), ra.checksum);
  XXH3_freeState(st);
  ::close(fd);

  // Padding between tensors is zero.
  const std::vector<char> bytes = ReadAll(a);
  for (size_t i = 0; i + 1 < t.tensors.size(); ++i) {
    for (uint64_t p = t.tensors[i].offset + t.tensors[i].size; p < t.tensors[i + 1].offset; ++p) {
      ASSERT_EQ(bytes[p], 0) << "padding at " << p;
    }
  }
  EXPECT_FALSE(HasTempFiles(dir.path()));
}

TEST(GeneratorTest, MultiChunkMoeFile) {
  // Larger than one 8 MiB chunk, with many small tensors crossing chunk boundaries.
  TempDir dir;
  const std::string a = dir.path() + "/m.wlf";
  GenOptions o = Small(a, 9);
  o.preset = "moe";
  o.size_bytes = 20ull << 20;
  o.align = 64;
  o.dtype = "f16";
  GenResult r;
  ASSERT_TRUE(Generate(o, &r).ok());
  TensorTable t;
  ASSERT_TRUE(ReadTensorTableFromPath(a, &t).ok());
  EXPECT_EQ(t.tensors.size(), r.tensor_count);
  EXPECT_EQ(t.tensors[0].dtype, "f16");
  // Each tensor's bytes are FillTensorBytes of its index.
  const std::vector<char> bytes = ReadAll(a);
  for (size_t i = 0; i < t.tensors.size(); i += 37) {
    std::vector<std::byte> want(t.tensors[i].size);
    FillTensorBytes(9, i, WlfDType::kF16, 0, want.data(), want.size());
    ASSERT_EQ(0, std::memcmp(want.data(), bytes.data() + t.tensors[i].offset, want.size()))
        << t.tensors[i].name;
  }
  EXPECT_FALSE(HasTempFiles(dir.path()));
}

TEST(GeneratorTest, ReusesSameSpecAndRegeneratesOtherSeed) {
  TempDir dir;
  const std::string a = dir.path() + "/a.wlf";
  GenResult r1, r2, r3;
  ASSERT_TRUE(Generate(Small(a, 1), &r1).ok());
  struct stat s1 {};
  ASSERT_EQ(::stat(a.c_str(), &s1), 0);
  ::usleep(20000);
  ASSERT_TRUE(Generate(Small(a, 1), &r2).ok());
  struct stat s2 {};
  ASSERT_EQ(::stat(a.c_str(), &s2), 0);
  EXPECT_TRUE(r2.reused);
  EXPECT_EQ(r2.checksum, r1.checksum);
  EXPECT_EQ(r2.file_bytes, r1.file_bytes);
  EXPECT_EQ(r2.tensor_count, r1.tensor_count);
  EXPECT_EQ(r2.tensor_bytes, r1.tensor_bytes);
  EXPECT_EQ(r2.seconds, 0);
  EXPECT_EQ(s1.st_mtim.tv_sec, s2.st_mtim.tv_sec);
  EXPECT_EQ(s1.st_mtim.tv_nsec, s2.st_mtim.tv_nsec);
  EXPECT_EQ(s1.st_ino, s2.st_ino);

  ASSERT_TRUE(Generate(Small(a, 2), &r3).ok());
  EXPECT_FALSE(r3.reused);
  EXPECT_NE(r3.checksum, r1.checksum);
  EXPECT_FALSE(HasTempFiles(dir.path()));
}

TEST(GeneratorTest, ReplacesFileThatIsNotWlf) {
  TempDir dir;
  const std::string a = dir.path() + "/a.wlf";
  { std::ofstream(a) << "not a weight file"; }
  GenResult r;
  ASSERT_TRUE(Generate(Small(a), &r).ok());
  EXPECT_FALSE(r.reused);
  TensorTable t;
  EXPECT_TRUE(ReadTensorTableFromPath(a, &t).ok());
}

TEST(GeneratorTest, BadOptionsAreBadInput) {
  TempDir dir;
  const std::string a = dir.path() + "/a.wlf";
  GenResult r;
  GenOptions o = Small(a);
  o.align = 100;
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);
  o.align = 32;
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);

  o = Small(a);
  o.format = "npy";
  Status st = Generate(o, &r);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_NE(st.message().find("unknown format 'npy'"), std::string::npos) << st.message();
  o = Small(a);
  o.format = "safetensors";
  o.align = 4096;
  st = Generate(o, &r);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_NE(st.message().find("safetensors has no tensor alignment"), std::string::npos);
  o = Small(a);
  o.format = "gguf";
  o.align = 48;
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);

  o = Small(dir.path() + "/no/such/dir/a.wlf");
  st = Generate(o, &r);
  EXPECT_EQ(st.code(), Status::Code::kBadInput);
  EXPECT_NE(st.message().find("does not exist"), std::string::npos) << st.message();

  o = Small("");
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);
  o = Small(a);
  o.size_bytes = 0;
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);
  o = Small(a);
  o.dtype = "f32";
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);
  o = Small(a);
  o.preset = "nope";
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);
  o = Small(dir.path());  // a directory
  EXPECT_EQ(Generate(o, &r).code(), Status::Code::kBadInput);

  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(HasTempFiles(dir.path()));
}

// ---- Byte order and misalignment ----

TensorTable ReadTable(const std::string& path) {
  TensorTable t;
  const Status s = ReadTensorTableFromPath(path, &t);
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

// The checksum of the tensor bytes read straight from the file, as a verified load computes it.
uint64_t FileChecksum(const std::string& path, const TensorTable& t) {
  UniqueFd fd;
  EXPECT_TRUE(OpenReadOnly(path, 0, &fd).ok());
  uint64_t sum = 0;
  const Status s =
      ChecksumFile(FileSource(fd.get(), path, std::filesystem::file_size(path)), t, &sum);
  EXPECT_TRUE(s.ok()) << s.message();
  return sum;
}

void ExpectSameTensors(const TensorTable& a, const TensorTable& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].size, b.tensors[i].size);
  }
}

std::string HeaderString(const TensorTable& t, const char* key) {
  const auto it = t.header.find(key);
  return it != t.header.end() && it->is_string() ? it->get<std::string>() : "";
}

// A big-endian file of seed S is the little-endian file of seed S with every field and every
// element byte-swapped: same table, each 2-byte element reversed, and a stored checksum that is
// the one of its own bytes. The moe file crosses 8 MiB chunks with many small tensors, so the
// swap is checked where chunk boundaries split tensors.
TEST(GeneratorByteOrderTest, BigEndianHoldsTheSameNumbersByteSwapped) {
  struct Case {
    const char* preset;
    const char* dtype;
    uint64_t size;
    uint64_t align;
  };
  for (const Case& c :
       {Case{"llama", "bf16", 2ull << 20, 0}, Case{"moe", "f16", 20ull << 20, 64}}) {
    SCOPED_TRACE(testing::Message() << c.preset << " " << c.dtype);
    TempDir dir;
    const std::string le = dir.path() + "/le.wlf", be = dir.path() + "/be.wlf";
    GenOptions lo = Small(le, 5);
    lo.preset = c.preset;
    lo.dtype = c.dtype;
    lo.size_bytes = c.size;
    lo.align = c.align;
    GenOptions bo = lo;
    bo.out_path = be;
    bo.endian = "big";
    GenResult rl, rb;
    ASSERT_TRUE(Generate(lo, &rl).ok());
    const Status s = Generate(bo, &rb);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(rb.file_bytes, rl.file_bytes);
    EXPECT_EQ(rb.tensor_count, rl.tensor_count);
    EXPECT_NE(rb.checksum, rl.checksum);

    const TensorTable tl = ReadTable(le), tb = ReadTable(be);
    EXPECT_FALSE(tl.big_endian);
    EXPECT_TRUE(tb.big_endian);
    EXPECT_EQ(HeaderString(tb, "byte_order"), "big");
    EXPECT_NE(HeaderString(tb, "gen_spec_id"), HeaderString(tl, "gen_spec_id"));
    EXPECT_EQ(tb.data_offset, tl.data_offset);
    EXPECT_EQ(tb.file_size, tl.file_size);
    ExpectSameTensors(tl, tb);
    for (size_t i = 0; i < tl.tensors.size(); ++i) {
      EXPECT_EQ(tb.tensors[i].offset, tl.tensors[i].offset) << tl.tensors[i].name;
    }
    ASSERT_TRUE(tb.expected_checksum.has_value());
    EXPECT_EQ(*tb.expected_checksum, rb.checksum);
    EXPECT_EQ(FileChecksum(be, tb), rb.checksum);

    const std::vector<char> L = ReadAll(le), B = ReadAll(be);
    ASSERT_EQ(L.size(), B.size());
    for (const TensorInfo& x : tl.tensors) {  // one assertion per tensor: 10M under ASan are slow
      uint64_t p = x.offset;
      while (p < x.offset + x.size && B[p] == L[p + 1] && B[p + 1] == L[p]) p += 2;
      ASSERT_EQ(p, x.offset + x.size)
          << x.name << ": element at byte " << p - x.offset << " is not swapped";
    }
    // Swapped for real: the generated bytes of an element are not all alike.
    EXPECT_NE(0, std::memcmp(L.data() + tl.data_offset, B.data() + tl.data_offset,
                             tl.tensors[0].size));
    EXPECT_FALSE(HasTempFiles(dir.path()));
  }
}

TEST(GeneratorByteOrderTest, ReusesOnlyAFileOfTheSameByteOrder) {
  TempDir dir;
  const std::string a = dir.path() + "/a.wlf";
  GenOptions be = Small(a, 4);
  be.endian = "big";
  GenResult r1, r2, r3;
  ASSERT_TRUE(Generate(be, &r1).ok());
  ASSERT_TRUE(Generate(be, &r2).ok());
  EXPECT_TRUE(r2.reused);
  EXPECT_EQ(r2.checksum, r1.checksum);
  ASSERT_TRUE(Generate(Small(a, 4), &r3).ok());  // little-endian, same seed: rewritten
  EXPECT_FALSE(r3.reused);
  EXPECT_FALSE(ReadTable(a).big_endian);
}

// Files written before endian and misalign existed keep their spec id, so they are reused.
TEST(GeneratorSpecTest, NewOptionsEnterTheSpecOnlyWhenSet) {
  auto id_of = [](const std::string& spec) { return XXH3_64bits(spec.data(), spec.size()); };
  GenPlan p;
  GenOptions o = Small("unused.wlf", 1);
  ASSERT_TRUE(PlanGenerated(o, &p).ok());
  EXPECT_EQ(p.spec_id, id_of("loadbench-gen v1 format=wlf preset=llama size=2097152 dtype=bf16 "
                             "align=4096 seed=1"));
  o.endian = "big";
  ASSERT_TRUE(PlanGenerated(o, &p).ok());
  EXPECT_EQ(p.spec_id, id_of("loadbench-gen v1 format=wlf preset=llama size=2097152 dtype=bf16 "
                             "align=4096 seed=1 endian=big"));
  o = Small("unused.safetensors", 1);
  o.format = "safetensors";
  ASSERT_TRUE(PlanGenerated(o, &p).ok());
  EXPECT_EQ(p.spec_id, id_of("loadbench-gen v1 format=safetensors preset=llama size=2097152 "
                             "dtype=bf16 align=0 seed=1"));
  o.misalign = 2;
  ASSERT_TRUE(PlanGenerated(o, &p).ok());
  EXPECT_EQ(p.spec_id, id_of("loadbench-gen v1 format=safetensors preset=llama size=2097152 "
                             "dtype=bf16 align=0 seed=1 misalign=2"));
}

// misalign works on every tensor alike only because every generated tensor's size is a
// multiple of 64 bytes (every shape has the hidden size, a multiple of 32, as a dimension).
TEST(GeneratorMisalignTest, GeneratedTensorSizesAreMultiplesOf64) {
  for (const std::string& preset : PresetNames()) {
    for (const char* dtype : {"bf16", "f16"}) {
      for (uint64_t size : {1ull << 20, 3ull << 20, 64ull << 20, 2ull << 30, 100ull << 30}) {
        SCOPED_TRACE(testing::Message() << preset << " " << dtype << " " << size);
        GenOptions o = Small("unused.safetensors");
        o.preset = preset;
        o.dtype = dtype;
        o.size_bytes = size;
        o.format = "safetensors";
        o.misalign = 5;
        GenPlan p;
        const Status s = PlanGenerated(o, &p);
        ASSERT_TRUE(s.ok()) << s.message();
        ASSERT_FALSE(p.layout.tensor_sizes.empty());
        size_t i = 0;  // the first tensor that breaks the rule: one assertion, not thousands
        while (i < p.layout.tensor_sizes.size() && p.layout.tensor_sizes[i] % 64 == 0 &&
               p.layout.tensor_offsets[i] % 64 == 5)
          ++i;
        ASSERT_EQ(i, p.layout.tensor_sizes.size())
            << p.model.tensors[i].name << ": size " << p.layout.tensor_sizes[i] << ", offset "
            << p.layout.tensor_offsets[i];
      }
    }
  }
}

// misalign 2: every tensor starts 2 bytes past a 64-byte boundary, holds the same bytes as in
// the aligned file, so both load with the same checksum; misalign 0 keeps the padding to 8.
TEST(GeneratorMisalignTest, Misalign2MovesEveryTensorAndKeepsTheChecksum) {
  TempDir dir;
  const std::string a0 = dir.path() + "/a0.safetensors", a2 = dir.path() + "/a2.safetensors";
  GenOptions o0 = Small(a0, 3);
  o0.format = "safetensors";
  GenOptions o2 = o0;
  o2.out_path = a2;
  o2.misalign = 2;
  GenResult r0, r2;
  ASSERT_TRUE(Generate(o0, &r0).ok());
  const Status s = Generate(o2, &r2);
  ASSERT_TRUE(s.ok()) << s.message();

  const TensorTable t0 = ReadTable(a0), t2 = ReadTable(a2);
  EXPECT_EQ(t0.data_offset % 8, 0u);
  EXPECT_EQ(t2.data_offset % 64, 2u);
  EXPECT_GT(t2.data_offset, t0.data_offset);
  EXPECT_LT(t2.data_offset, t0.data_offset + 64);
  ExpectSameTensors(t0, t2);
  for (size_t i = 0; i < t2.tensors.size(); ++i) {
    EXPECT_EQ(t2.tensors[i].offset % 64, 2u) << t2.tensors[i].name;
    EXPECT_EQ(t2.tensors[i].offset - t2.data_offset, t0.tensors[i].offset - t0.data_offset);
  }
  EXPECT_EQ(r2.checksum, r0.checksum);
  ASSERT_TRUE(t0.expected_checksum.has_value() && t2.expected_checksum.has_value());
  EXPECT_EQ(*t2.expected_checksum, *t0.expected_checksum);
  EXPECT_EQ(FileChecksum(a2, t2), r0.checksum);
  EXPECT_EQ(FileChecksum(a0, t0), r0.checksum);
  EXPECT_NE(HeaderString(t2, "gen_spec_id"), HeaderString(t0, "gen_spec_id"));
  EXPECT_FALSE(HasTempFiles(dir.path()));
}

TEST(GeneratorByteOrderTest, BadCombinationsAreBadInput) {
  TempDir dir;
  const std::string a = dir.path() + "/a.out";
  auto refused = [&](const GenOptions& o, std::vector<std::string_view> words) {
    GenResult r;
    const Status s = Generate(o, &r);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << o.format << ": " << s.message();
    for (std::string_view w : words) {
      EXPECT_NE(s.message().find(w), std::string::npos) << "no '" << w << "' in " << s.message();
    }
  };
  GenOptions o = Small(a);
  o.endian = "middle";
  refused(o, {"endian 'middle'", "little or big"});
  for (const char* format : {"safetensors", "gguf"}) {
    o = Small(a);
    o.format = format;
    o.endian = "big";
    refused(o, {"endian big", "WLF only", "use format wlf"});
  }
  for (const char* format : {"wlf", "gguf"}) {
    o = Small(a);
    o.format = format;
    o.misalign = 2;
    refused(o, {"misalign 2", "alignment", "use format safetensors"});
  }
  o = Small(a);
  o.format = "safetensors";
  o.misalign = 64;
  refused(o, {"misalign 64", "0 to 63"});
  o.misalign = 63;
  GenPlan p;
  EXPECT_TRUE(PlanGenerated(o, &p).ok());
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(HasTempFiles(dir.path()));
}

// ---- The front ends: `gen --endian/--misalign` and experiment [[file]] keys ----

TEST(GeneratorFrontEndTest, GenCommandTakesEndianAndMisalign) {
  TempDir dir;
  const std::string be = dir.path() + "/be.wlf", mis = dir.path() + "/mis.safetensors";
  test::ProcessResult r = test::RunLoadbench(
      {"gen", "--size", "2MiB", "--out", be, "--endian", "big", "--seed", "3", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << test::Describe(r);
  EXPECT_TRUE(ReadTable(be).big_endian);
  r = test::RunLoadbench({"gen", "--size", "2MiB", "--out", mis, "--format", "safetensors",
                          "--misalign", "2", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << test::Describe(r);
  EXPECT_EQ(ReadTable(mis).tensors.at(0).offset % 64, 2u);

  r = test::RunLoadbench({"gen", "--size", "2MiB", "--out", dir.path() + "/x.gguf", "--format",
                          "gguf", "--endian", "big", "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << test::Describe(r);
  EXPECT_NE(r.err.find("endian big is for WLF only"), std::string::npos) << test::Describe(r);
  EXPECT_FALSE(fs::exists(dir.path() + "/x.gguf"));
}

class GeneratorExperimentTest : public ::testing::Test {
 protected:
  Status Load(const std::string& file_keys, Experiment* e) {
    const std::string path = dir_.path() + "/e.toml";
    std::ofstream(path) << "[[file]]\npreset = \"llama\"\nsize = \"2MiB\"\n"
                        << file_keys << "\n[[strategy]]\nname = \"pread\"\n";
    return LoadExperiment(path, dir_.path() + "/data", e);
  }
  TempDir dir_;
};

TEST_F(GeneratorExperimentTest, FileKeysNameTheGeneratedFile) {
  Experiment e;
  Status s = Load("endian = \"big\"", &e);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(e.files.size(), 1u);
  EXPECT_EQ(e.files[0].gen.endian, "big");
  EXPECT_EQ(e.files[0].path, dir_.path() + "/data/llama-2MiB-bf16-s0-be.wlf");

  s = Load("format = \"safetensors\"\nmisalign = 2", &e);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.files[0].gen.misalign, 2u);
  EXPECT_EQ(e.files[0].path, dir_.path() + "/data/llama-2MiB-bf16-s0-mis2.safetensors");

  s = Load("endian = \"little\"", &e);  // the default, named as before
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(e.files[0].path, dir_.path() + "/data/llama-2MiB-bf16-s0.wlf");
}

TEST_F(GeneratorExperimentTest, BadFileKeysNameTheLine) {
  Experiment e;
  for (const auto& [keys, words] : std::vector<std::pair<std::string, std::string>>{
           {"endian = \"middle\"", "endian 'middle'"},
           {"endian = 1", "endian must be a string"},
           {"format = \"gguf\"\nendian = \"big\"", "WLF only"},
           {"misalign = 64", "misalign = 64 is out of range"},
           {"misalign = 2", "use format safetensors"}}) {
    const Status s = Load(keys, &e);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << keys;
    EXPECT_NE(s.message().find(dir_.path() + "/e.toml:"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  }
}

// Interruption is process-global and cannot be undone, so it is tested in a child process.
TEST(GeneratorTest, InterruptedRemovesTempFile) {
  TempDir dir;
  const std::string a = dir.path() + "/a.wlf";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InstallInterruptHandlers();
    ::raise(SIGINT);
    if (!Interrupted() || InterruptSignal() != SIGINT) ::_exit(3);
    GenResult r;
    Status st = Generate(Small(a), &r);
    if (st.ok() || st.message() != "interrupted") ::_exit(4);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(HasTempFiles(dir.path()));
}

TEST(GeneratorTest, SecondSignalGetsDefaultAction) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InstallInterruptHandlers();
    InstallInterruptHandlers();  // idempotent
    ::raise(SIGTERM);
    if (InterruptSignal() != SIGTERM) ::_exit(3);
    ::raise(SIGINT);  // another kind: still handled, first signal kept
    if (InterruptSignal() != SIGTERM) ::_exit(4);
    ::raise(SIGTERM);  // the same kind again: default action, the process dies
    ::_exit(5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace loadbench
