#include "tests/support/real_files.h"

#include <filesystem>
#include <fstream>
#include <set>

namespace loadbench::test {
namespace {

namespace fs = std::filesystem;

// File names in the first column of a MANIFEST.tsv, header row excluded.
std::vector<std::string> ManifestNames(const fs::path& manifest) {
  std::vector<std::string> names;
  std::ifstream in(manifest);
  std::string line;
  for (bool header = true; std::getline(in, line); header = false) {
    if (header || line.empty()) continue;
    names.push_back(line.substr(0, line.find('\t')));
  }
  return names;
}

}  // namespace

std::vector<std::string> RealFiles(std::vector<std::string>* skipped) {
  const fs::path local = fs::path(LOADBENCH_SOURCE_DIR) / "tests" / "real";
  const fs::path shared = fs::path(LOADBENCH_SOURCE_DIR) / ".." / "shared" / "testdata" / "real";
  std::set<std::string> names;
  for (const fs::path& dir : {local, shared}) {
    for (const std::string& n : ManifestNames(dir / "MANIFEST.tsv")) names.insert(n);
  }
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (fs::exists(local / n)) {
      out.push_back((local / n).string());
    } else if (fs::exists(shared / n)) {
      out.push_back((shared / n).lexically_normal().string());
    } else if (skipped) {
      skipped->push_back(n + ": in neither tests/real/ nor ../shared/testdata/real/");
    }
  }
  return out;
}

}  // namespace loadbench::test
