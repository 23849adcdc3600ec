// `loadbench completion bash`: a bash completion script made from the command line's own
// declaration (main.cc walks the CLI11 app into the tree below), so that it never drifts from
// the flags: each subcommand, and each one's options, complete where they may be typed.
#pragma once

#include <string>
#include <vector>

namespace loadbench::cli {

// A command as completion sees it: its name, its subcommands, its options (every name, e.g.
// -v and --verbose) and, of those, the ones that take a value (after which file names
// complete).
struct CompletionCommand {
  std::string name;
  std::vector<CompletionCommand> subcommands;
  std::vector<std::string> options;
  std::vector<std::string> options_with_value;
};

// The script, for `source <(loadbench completion bash)`: it completes `loadbench` (and a path
// that ends in /loadbench) from `root`, file names where nothing else fits.
std::string BashCompletion(const CompletionCommand& root);

}  // namespace loadbench::cli
