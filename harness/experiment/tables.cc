// What the readers of an experiment's tables share: naming a bad value, and reading one.
#include "harness/experiment/tables.h"

#include "loaders/base/units.h"
#include "loaders/use/spec.h"

namespace loadbench {

Status TableReader::Bad(const toml::node& where, const std::string& what) const {
  if (source_.path.empty()) {
    const auto flag = source_.flags.find(&where);
    if (flag == source_.flags.end()) return Status::BadInput(what);
    return Status::BadInput(fmt::format("{}: {}", flag->second, what));
  }
  return Status::BadInput(fmt::format("{}:{}: {}", source_.path, where.source().begin.line, what));
}

Status TableReader::BadSource(const std::string& what) const {
  if (source_.path.empty()) return Status::BadInput(what);
  return Status::BadInput(fmt::format("{}: {}", source_.path, what));
}

Status TableReader::String(const toml::node& n, const char* what, std::string* out) const {
  auto v = n.value<std::string>();
  if (!v) return Bad(n, fmt::format("{} must be a string", what));
  *out = *v;
  return Status::Ok();
}

Status TableReader::Integer(const toml::node& n, const char* what, int64_t lo, int64_t hi,
                            int64_t* out) const {
  if (!n.is_integer()) return Bad(n, fmt::format("{} must be an integer", what));
  *out = *n.value<int64_t>();
  if (*out < lo || *out > hi) {
    return Bad(n, fmt::format("{} = {} is out of range ({} to {})", what, *out, lo, hi));
  }
  return Status::Ok();
}

Status TableReader::Bytes(const toml::node& n, const char* what, bool none_ok,
                          uint64_t* out) const {
  if (n.is_integer() && *n.value<int64_t>() > 0) {
    *out = static_cast<uint64_t>(*n.value<int64_t>());
    return Status::Ok();
  }
  auto text = n.value<std::string>();
  if (text && none_ok && *text == "none") {
    *out = 0;
    return Status::Ok();
  }
  Status s = text ? ParseBytes(*text, what, out)
                  : Status::BadInput(fmt::format("{} must be a size such as \"4GiB\"{}", what,
                                                 none_ok ? " or \"none\"" : ""));
  if (s.ok() && *out == 0) s = Status::BadInput(fmt::format("{} must not be 0", what));
  if (!s.ok()) return Bad(n, s.message());
  return Status::Ok();
}

std::string TableReader::ViaError(const std::string& v) {
  return fmt::format("via = \"{}\": it takes \"local\", \"http\", \"s3\" or \"s3fs\"", v);
}

Status TableReader::Via(const toml::node& n, std::string* out) const {
  std::string v;
  LB_RETURN_IF_ERROR(String(n, "via", &v));
  if (!IsVia(v)) return Bad(n, ViaError(v));
  *out = v == "local" ? "" : v;
  return Status::Ok();
}

}  // namespace loadbench
