#include "harness/cli/completion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace loadbench::cli {
namespace {

// The case arms of `c` and every command under it, keyed by its path of subcommand names
// ("run", "system tune"; "" for the top): its options, those that take a value, its
// subcommands.
void Arms(const CompletionCommand& c, const std::string& path, std::string* words,
          std::string* valued, std::string* subs) {
  std::vector<std::string> names;
  for (const CompletionCommand& s : c.subcommands) names.push_back(s.name);
  *words += fmt::format("    \"{}\") words=\"{}\" ;;\n", path, fmt::join(c.options, " "));
  if (!c.options_with_value.empty()) {
    *valued +=
        fmt::format("    \"{}\") valued=\" {} \" ;;\n", path, fmt::join(c.options_with_value, " "));
  }
  if (!names.empty())
    *subs += fmt::format("    \"{}\") subs=\" {} \" ;;\n", path, fmt::join(names, " "));
  for (const CompletionCommand& s : c.subcommands) {
    Arms(s, path.empty() ? s.name : path + " " + s.name, words, valued, subs);
  }
}

}  // namespace

std::string BashCompletion(const CompletionCommand& root) {
  std::string words, valued, subs;
  Arms(root, "", &words, &valued, &subs);
  return fmt::format(
      R"(# bash completion for loadbench, made by `loadbench completion bash` from the command
# line's own declaration. Use: source <(loadbench completion bash)
_loadbench_subs() {{
  case "$1" in
{}    *) subs="" ;;
  esac
}}
_loadbench_words() {{
  case "$1" in
{}    *) words="" ;;
  esac
}}
_loadbench_valued() {{
  case "$1" in
{}    *) valued="" ;;
  esac
}}
_loadbench() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local path="" subs words valued i w
  # The subcommands typed so far, in order, make the path whose words complete.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${{COMP_WORDS[i]}}
    _loadbench_subs "$path"
    if [[ $subs == *" $w "* ]]; then path=${{path:+$path }}$w; fi
  done
  _loadbench_valued "$path"
  COMPREPLY=()
  # After an option that takes a value: file names (bash's default).
  if [[ $valued == *" $prev "* ]]; then return 0; fi
  _loadbench_words "$path"
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  else
    _loadbench_subs "$path"
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  fi
  return 0
}}
complete -o default -o bashdefault -F _loadbench loadbench
)",
      subs, words, valued);
}

}  // namespace loadbench::cli
