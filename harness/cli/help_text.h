// --help laid out for the reader's terminal: every line wrapped at its width, so that no line of
// a subcommand's help runs past it. Plain text in, plain text out; main.cc's formatter (the only
// code that sees CLI11) calls these for each part of a page.
#pragma once

#include <cstddef>
#include <string>

namespace loadbench::cli {

// The width help is wrapped at: COLUMNS when it is a number, else the terminal's (ioctl
// TIOCGWINSZ on stdout), else 100 (not a terminal: a pipe, a file). Never below 20.
size_t HelpWidth();

// `text` with each of its lines wrapped at spaces so that no line is wider than `width`: the
// first line starts with `first` (counted in the width), every other line of a paragraph with
// `indent` spaces, and an empty line or a line that starts with a space is a paragraph of its
// own. A word longer than a whole line is cut. Ends with a newline unless `text` is empty.
std::string Wrap(const std::string& text, size_t width, const std::string& first, size_t indent);

// A two-column entry of an option or a subcommand: "  NAME" padded to `column`, then the
// description wrapped at `width` and indented to `column`; NAME alone on its line when it
// reaches the column.
std::string HelpEntry(const std::string& name, const std::string& description, size_t column,
                      size_t width);

}  // namespace loadbench::cli
