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
#include <vector>

#include "harness/interrupt.h"
#include "loaders/format/format.h"

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
  const std::string a = dir.path() + "/a.wlf", b = dir.path() + "/b.wlf",
                    c = dir.path() + "/c.wlf";
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
