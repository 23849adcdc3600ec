// Test support: load a file with a strategy named as on the command line ("pread:chunk=5"),
// the way the worker does, minus the timing.
#pragma once

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "loaders/strategy/registry.h"
#include "loaders/use/spec.h"

namespace loadbench::test {

// Parses `strategy_text`, resolves its options, reads the tensor table of `path` and loads it;
// `*loader` owns the memory `*views` point into. A streaming strategy (layered) is walked
// group by group and each group copied, so that its views outlive it. Errors as ParseStrategyList,
// Params::Resolve, ReadTensorTableFromPath and Loader::Load give them.
Status LoadWith(const std::string& strategy_text, const std::string& path,
                std::unique_ptr<Loader>* loader, std::vector<TensorBytes>* views);

// A strategy spec as a test name: "io_uring:qd=2" becomes "io_uring_qd_2" (GoogleTest takes
// letters, digits and '_' only). For INSTANTIATE_TEST_SUITE_P over strategy specs.
struct SpecName {
  template <typename ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    std::string n = info.param;
    for (char& c : n) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return n;
  }
};

}  // namespace loadbench::test
