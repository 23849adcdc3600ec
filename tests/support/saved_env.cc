#include "tests/support/saved_env.h"

#include <cstdlib>

namespace loadbench::test {

SavedEnv::SavedEnv(std::vector<std::string> names) {
  for (std::string& name : names) {
    const char* v = std::getenv(name.c_str());
    saved_.emplace_back(std::move(name), v ? std::optional<std::string>(v) : std::nullopt);
  }
}

SavedEnv::~SavedEnv() {
  for (const auto& [name, value] : saved_) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
}

}  // namespace loadbench::test
