#include "loaders/base/units.h"

#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace loadbench {

Status ParseBytes(const std::string& text, const std::string& what, uint64_t* out) {
  auto bad = [&] {
    return Status::BadInput(
        fmt::format("{}: '{}' is not a size (examples: 4096, 512KiB, 2GiB, 1.5GB)", what, text));
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  std::string number = text.substr(0, i);
  std::string unit;
  for (char c : std::string_view(text).substr(i)) {
    if (c != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return bad();

  static const struct {
    const char* name;
    double factor;
  } kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", 1024.0},
      {"kib", 1024.0},
      {"kb", 1e3},
      {"m", 1048576.0},
      {"mib", 1048576.0},
      {"mb", 1e6},
      {"g", 1073741824.0},
      {"gib", 1073741824.0},
      {"gb", 1e9},
      {"t", 1099511627776.0},
      {"tib", 1099511627776.0},
      {"tb", 1e12},
  };
  for (const auto& u : kUnits) {
    if (unit != u.name) continue;
    // Integers without a unit are taken exactly; everything else goes through double.
    if (number.find('.') == std::string::npos && u.factor == 1) {
      if (number.size() > 20) return bad();
      try {
        *out = std::stoull(number);
      } catch (const std::out_of_range&) {
        return bad();
      }
      return Status::Ok();
    }
    const double v = std::round(std::stod(number) * u.factor);
    if (!std::isfinite(v) || v >= 18446744073709551616.0) return bad();
    *out = static_cast<uint64_t>(v);
    return Status::Ok();
  }
  return bad();
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", v, kNames[u]);
}

}  // namespace loadbench
