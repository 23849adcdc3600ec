// Test support: environment variables saved when a test starts and restored when it ends, so
// that the test may set and unset them as it likes. For tests only; linked into loadbench_tests.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loadbench::test {

class SavedEnv final {
 public:
  // Saves `names` as they are now (set to a value, or unset).
  explicit SavedEnv(std::vector<std::string> names);
  // Puts each back as it was.
  ~SavedEnv();
  SavedEnv(const SavedEnv&) = delete;
  SavedEnv& operator=(const SavedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace loadbench::test
