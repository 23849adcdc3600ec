#include "harness/machine/tune_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

std::string StateDir() {
  const char* env = std::getenv("LOADBENCH_STATE_DIR");
  return env != nullptr && *env != '\0' ? env : "/run/loadbench";
}

Json ToJson(const TuneRecord& r) {
  Json changes = Json::array();
  for (const SettingChange& c : r.changes) {
    changes.push_back({{"path", c.path}, {"before", c.before}, {"after", c.after}, {"why", c.why}});
  }
  return {{"by", r.by},
          {"since", r.since},
          {"page_reporting", PageReportingChoiceName(r.page_reporting)},
          {"changes", changes}};
}

// The record in `j`; false when it is not of that shape or names a setting tune does not write.
bool FromJson(const Json& j, TuneRecord* r) {
  try {
    r->by = j.at("by").get<std::string>();
    r->since = j.at("since").get<std::string>();
    if (!ParsePageReportingChoice(j.at("page_reporting").get<std::string>(), "page_reporting",
                                  &r->page_reporting)
             .ok()) {
      return false;
    }
    for (const Json& c : j.at("changes")) {
      r->changes.push_back({c.at("path").get<std::string>(), c.at("before").get<std::string>(),
                            c.at("after").get<std::string>(), c.value("why", "")});
      if (!IsTunableSetting(r->changes.back().path, r->changes.back().before)) return false;
    }
  } catch (const Json::exception&) {
    return false;
  }
  return true;
}

Status ReadAll(int fd, const std::string& path, std::string* text) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(path, errno);
    if (n == 0) return Status::Ok();
    text->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

std::string TuneStatePath() { return StateDir() + "/system-state.json"; }

Status LoadTuneState(TuneRecord* out, bool* found) {
  const std::string path = TuneStatePath();
  *found = false;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid() && errno == ENOENT) return Status::Ok();
  if (!fd.valid()) return Status::IOErrorFromErrno(path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_uid != 0 && st.st_uid != ::geteuid()) || (st.st_mode & 022) != 0) {
    return Status::BadInput(fmt::format(
        "{}: not a state file loadbench wrote (not a regular file of root's, or writable by "
        "others); remove it",
        path));
  }
  std::string text;
  LB_RETURN_IF_ERROR(ReadAll(fd.get(), path, &text));
  const Json j = Json::parse(text, nullptr, false);
  TuneRecord r;
  if (j.is_discarded() || !FromJson(j, &r)) {
    return Status::BadInput(fmt::format(
        "{}: not a state file of `loadbench system tune` (malformed, or it names a setting tune "
        "does not write); remove it",
        path));
  }
  *out = std::move(r);
  *found = true;
  return Status::Ok();
}

Status SaveTuneState(const TuneRecord& r) {
  const std::string dir = StateDir(), path = TuneStatePath(), tmp = path + ".tmp";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOErrorFromErrno("cannot create " + dir, errno);
  }
  (void)::unlink(tmp.c_str());  // one a killed tune left
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  const std::string text = ToJson(r).dump(2) + "\n";
  bool ok = fd.valid() &&
            ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ok && ::fsync(fd.get()) == 0;
  fd.reset();
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    (void)::unlink(tmp.c_str());
    return Status::IOErrorFromErrno("cannot write " + path, err);
  }
  return Status::Ok();
}

Status RemoveTuneState() {
  const std::string path = TuneStatePath();
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::IOErrorFromErrno("cannot remove " + path, errno);
  }
  return Status::Ok();
}

}  // namespace loadbench
