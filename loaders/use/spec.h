// A strategy as the user writes it on the command line or in an experiment: its name, its own
// options, the use options (use/use.h) and how the readers reach the file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

// A strategy with its options as written on the command line: "fread:chunk=4MiB".
struct StrategySpec {
  std::string name;
  std::map<std::string, std::string> options;
  std::string text;  // as given, for messages
  // How the readers reach the file (`via=`, taken by every strategy, never one of its options):
  // "" for the file itself, or through an experiment's [server]: "http", "s3", or "s3fs" (a
  // FUSE mount of the bucket).
  std::string via = "";
};

// The values `via=` takes.
bool IsVia(const std::string& v);

// Parses "a,b:k=v:k2=v2,c"; "all" stands for every registered strategy with default options.
// kBadInput for empty names, malformed options or unknown strategies.
Status ParseStrategyList(const std::string& text, std::vector<StrategySpec>* out);

}  // namespace loadbench
