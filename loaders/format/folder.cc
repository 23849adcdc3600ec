// Where a shard's name leads: the one rule by which an index's shards and a GGUF split's siblings
// are kept inside their folder (docs/formats.md, "Containment").
#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <memory>

#include <fmt/format.h>

#include "loaders/base/text.h"
#include "loaders/format/model_forms.h"

namespace loadbench {

bool RealPath(const std::string& path, std::string* out, int* err) {
  std::unique_ptr<char, decltype(&free)> p(::realpath(path.c_str(), nullptr), &free);
  if (!p) {
    *err = errno;
    return false;
  }
  *out = p.get();
  return true;
}

std::string OutsideFolder(const std::string& real, const std::string& real_folder) {
  if (real == real_folder) return "the folder itself";
  if (real.starts_with(real_folder == "/" ? real_folder : real_folder + "/")) return "";
  return fmt::format("a link to {}", Printable(real));
}

}  // namespace loadbench
