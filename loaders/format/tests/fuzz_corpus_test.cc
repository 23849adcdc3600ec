// Replays the fuzzers' seeds and every crasher they ever found (loaders/format/fuzz/) through
// the readers, in the normal and the sanitizer build: each must be refused cleanly or read into
// a table that describes only bytes of the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "loaders/format/format.h"
#include "loaders/format/fuzz/fuzz_input.h"
#include "loaders/format/gguf.h"
#include "loaders/format/safetensors.h"

namespace loadbench {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> FilesUnder(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  }
  return out;
}

TEST(FuzzCorpus, SeedsAndCrashersAreReadOrRefusedCleanly) {
  const fs::path root = fs::path(LOADBENCH_SOURCE_DIR) / "loaders" / "format" / "fuzz";
  std::vector<fs::path> files = FilesUnder(root / "seeds");
  const std::vector<fs::path> crashers = FilesUnder(root / "regressions");
  files.insert(files.end(), crashers.begin(), crashers.end());
  ASSERT_GE(files.size(), 5u) << "the seed corpus is missing";
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    const int fd = fuzz::InputFd(bytes.data(), bytes.size());
    // Each reader directly, as its fuzz target calls it, and through format detection.
    TensorTable a, b, c;
    const FileSource src(fd, f.string(), bytes.size());
    Status s = ReadSafetensors(src, &a);
    EXPECT_EQ(fuzz::TableProblem(s, a, bytes.size()), "") << f << " (safetensors): " << s.message();
    s = ReadGguf(src, &b);
    EXPECT_EQ(fuzz::TableProblem(s, b, bytes.size()), "") << f << " (gguf): " << s.message();
    s = ReadTensorTable(src, &c);
    EXPECT_EQ(fuzz::TableProblem(s, c, bytes.size()), "") << f << " (detected): " << s.message();
  }
}

}  // namespace
}  // namespace loadbench
