#include "loaders/base/text.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace loadbench {
namespace {

bool PlainAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7F && c != '"' && c != '\\';
  });
}

// nlohmann's serializer does the escaping and the UTF-8 repair.
std::string Quoted(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string JsonSafe(std::string_view s) {
  if (PlainAscii(s)) return std::string(s);
  return nlohmann::json::parse(Quoted(s)).get<std::string>();
}

std::string Printable(std::string_view s) {
  if (PlainAscii(s)) return std::string(s);
  const std::string q = Quoted(s);
  return q.substr(1, q.size() - 2);
}

bool ParseHex64(std::string_view text, uint64_t* out) {
  if (text.size() != 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

}  // namespace loadbench
