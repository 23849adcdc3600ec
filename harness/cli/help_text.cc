#include "harness/cli/help_text.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace loadbench::cli {
namespace {

constexpr size_t kNarrowest = 20;

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// One paragraph (no newline in it) wrapped: `first` before its first line, `indent` spaces
// before the others.
std::string WrapParagraph(const std::string& line, size_t width, const std::string& first,
                          size_t indent) {
  std::string out = first, current = first;
  auto newline = [&] {
    out += "\n" + std::string(indent, ' ');
    current = std::string(indent, ' ');
  };
  bool at_start = true;  // nothing but the lead on the current line yet
  for (std::string word : Words(line)) {
    const size_t gap = at_start ? 0 : 1;
    if (!at_start && current.size() + gap + word.size() > width) {
      newline();
      at_start = true;
    }
    // A word wider than a whole line is cut at the width.
    while (current.size() + (at_start ? 0 : 1) + word.size() > width) {
      if (!at_start) newline(), at_start = true;
      const size_t room = width > current.size() ? width - current.size() : 1;
      out += word.substr(0, room);
      word.erase(0, room);
      newline();
    }
    if (word.empty()) continue;
    out += (at_start ? "" : " ") + word;
    current += (at_start ? "" : " ") + word;
    at_start = false;
  }
  // Trailing spaces of an empty last line (a lead, or an indent after a cut word) go.
  out.erase(out.find_last_not_of(' ') + 1);
  return out;
}

}  // namespace

size_t HelpWidth() {
  size_t width = 100;
  winsize ws{};
  if (const char* c = std::getenv("COLUMNS"); c != nullptr && *c != '\0') {
    char* end = nullptr;
    const long v = std::strtol(c, &end, 10);
    if (*end == '\0' && v > 0) return std::max(static_cast<size_t>(v), kNarrowest);
  }
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    width = ws.ws_col;
  }
  return std::max(width, kNarrowest);
}

std::string Wrap(const std::string& text, size_t width, const std::string& first, size_t indent) {
  if (text.empty()) return "";
  std::string out;
  std::istringstream in(text);
  bool first_line = true;
  for (std::string line; std::getline(in, line);) {
    const std::string lead = first_line ? first : std::string(indent, ' ');
    first_line = false;
    if (Words(line).empty()) {
      out += "\n";
      continue;
    }
    // A line that starts with spaces (an example, a list item) keeps them, and its wrapped
    // lines go four further in.
    const size_t own = line.find_first_not_of(' ');
    const std::string own_lead = lead + line.substr(0, own);
    out += WrapParagraph(line.substr(own), width, own_lead,
                         own == 0 ? indent : std::min(own_lead.size() + 4, width / 2)) +
           "\n";
  }
  return out;
}

std::string HelpEntry(const std::string& name, const std::string& description, size_t column,
                      size_t width) {
  column = std::min(column, width / 2);
  const std::string lead = "  " + name;
  if (description.empty()) return Wrap(lead, width, "", column);
  if (lead.size() + 1 > column) {
    return Wrap(lead, width, "", column) +
           Wrap(description, width, std::string(column, ' '), column);
  }
  return Wrap(description, width, lead + std::string(column - lead.size(), ' '), column);
}

}  // namespace loadbench::cli
