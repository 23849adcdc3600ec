// Test support: the real safetensors and GGUF files written by other projects' tools. Those
// whose license allows it are copied into tests/real/; the others are read from
// ../shared/testdata/real/ beside the checkout when it is there (see tests/real/README.md).
#pragma once

#include <string>
#include <vector>

namespace loadbench::test {

// Paths of every real weight file found, tests/real/ first; a file present in both places is
// listed once. `skipped` (when given) receives a line per MANIFEST file found nowhere.
std::vector<std::string> RealFiles(std::vector<std::string>* skipped = nullptr);

}  // namespace loadbench::test
