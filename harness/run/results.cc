#include "harness/run/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "harness/run/session.h"

namespace loadbench {
Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return Status::BadInput("empty directory name");
  for (size_t pos = 1;; ++pos) {
    pos = dir.find('/', pos);
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno(fmt::format("{}: cannot create directory", prefix), errno);
    }
    if (pos == std::string::npos) break;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::BadInput(fmt::format("{}: not a directory", dir));
  }
  return Status::Ok();
}

Status WriteJsonFile(const std::string& path, const nlohmann::ordered_json& value) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno(tmp, errno);
  const std::string text =
      value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  Status s = WriteExact(fd.get(), tmp, text.data(), text.size());
  if (s.ok() && ::fsync(fd.get()) != 0) s = Status::FromErrno(fmt::format("{}: fsync", tmp), errno);
  fd.reset();
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FromErrno(fmt::format("{}: rename", path), errno);
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status JsonlWriter::Open(const std::string& path) {
  fd_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd_.valid()) return Status::FromErrno(path, errno);
  path_ = path;
  return Status::Ok();
}

Status JsonlWriter::Append(const nlohmann::ordered_json& record) {
  const std::string line =
      record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  LB_RETURN_IF_ERROR(WriteExact(fd_.get(), path_, line.data(), line.size()));
  if (::fdatasync(fd_.get()) != 0) return Status::FromErrno(fmt::format("{}: fdatasync", path_), errno);
  return Status::Ok();
}

std::vector<nlohmann::ordered_json> ReadRecords(const std::string& path) {
  std::vector<nlohmann::ordered_json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto r = nlohmann::ordered_json::parse(line, nullptr, false);
    if (r.is_object()) out.push_back(std::move(r));
  }
  return out;
}

Status ReadRecorded(const std::string& path, const std::string& experiment,
                    const std::string& who, std::set<std::string>* keys, size_t* records) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Ok();  // nothing recorded yet
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  size_t pos = 0, line_no = 0, good_end = 0;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      fmt::print(stderr, "{}: {}: line {} is cut short (an interrupted write); removing it\n",
                 who, path, line_no);
      if (::truncate(path.c_str(), static_cast<off_t>(good_end)) != 0) {
        return Status::FromErrno(fmt::format("{}: truncate", path), errno);
      }
      break;
    }
    const auto r = nlohmann::ordered_json::parse(text.substr(pos, nl - pos), nullptr, false);
    if (!r.is_object() || !r.contains("strategy_spec") || !r.contains("rep")) {
      return Status::BadInput(fmt::format("{}:{}: not a run record", path, line_no));
    }
    if (r.value("experiment", "") != experiment) {
      return Status::BadInput(fmt::format(
          "{} holds runs of experiment '{}', not '{}'; choose another --out", path,
          r.value("experiment", ""), experiment));
    }
    keys->insert(RunKey(r));
    ++*records;
    pos = good_end = nl + 1;
  }
  return Status::Ok();
}

}  // namespace loadbench
