#include "harness/record/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "harness/process/journal.h"

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

Status WriteFileWhole(const std::string& path, const std::string& text) {
  const std::string tmp = TempSibling(path);
  TrackLeftover(Leftover::kFile, tmp);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  Status s = fd.valid() ? WriteExact(fd.get(), tmp, text.data(), text.size())
                        : Status::FromErrno(tmp, errno);
  if (s.ok() && ::fsync(fd.get()) != 0) s = Status::FromErrno(fmt::format("{}: fsync", tmp), errno);
  fd.reset();
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FromErrno(fmt::format("{}: rename", path), errno);
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  UntrackLeftover(Leftover::kFile, tmp);
  return s.ok() ? s : Status::NotWritten(s.message());
}

Status WriteJsonFile(const std::string& path, const nlohmann::ordered_json& value) {
  return WriteFileWhole(
      path, value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

Status CopyFileWhole(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return Status::FromErrno(from, errno);
  std::stringstream text;
  text << in.rdbuf();
  return WriteFileWhole(to, text.str());
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
  struct stat before {};
  if (::fstat(fd_.get(), &before) != 0) return Status::FromErrno(path_, errno);
  Status s = WriteExact(fd_.get(), path_, line.data(), line.size());
  if (s.ok() && ::fdatasync(fd_.get()) != 0) {
    s = Status::FromErrno(fmt::format("{}: fdatasync", path_), errno);
  }
  if (s.ok()) return s;
  // A line cut short by a full disk is taken back: the file ends with its last whole line.
  if (::ftruncate(fd_.get(), before.st_size) != 0) {
    return Status::OfErrno(Status::Code::kNotWritten,
                           s.message() + "; and cutting back the part written failed", errno);
  }
  (void)::fdatasync(fd_.get());
  return Status::NotWritten(s.message());
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

Status ReadRecorded(const std::string& path, const std::string& experiment, const std::string& who,
                    std::set<std::string>* keys, size_t* records) {
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
      fmt::print(stderr, "{}: {}: line {} is cut short (an interrupted write); removing it\n", who,
                 path, line_no);
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
      return Status::BadInput(
          fmt::format("{} holds runs of experiment '{}', not '{}'; choose another --out", path,
                      r.value("experiment", ""), experiment));
    }
    keys->insert(RunKey(r));
    ++*records;
    pos = good_end = nl + 1;
  }
  return Status::Ok();
}

std::string RunKeyOf(const std::string& file, const std::string& spec, const std::string& cache,
                     int rep, int procs, uint64_t memory_limit, const std::string& pattern,
                     const std::string& link, const std::string& fabric,
                     const std::string& storage) {
  // Replicated is every record's pattern from before patterns, no link every record's from
  // before links, no fabric every record's from before clusters, no storage every record's
  // from before storages: their keys are unchanged.
  return fmt::format("{}|{}|{}|{}|{}|{}{}{}{}{}", file, spec, cache, rep, procs, memory_limit,
                     pattern == "replicated" ? "" : "|" + pattern,
                     link.empty() ? "" : "|link=" + link, fabric.empty() ? "" : "|fabric=" + fabric,
                     storage.empty() ? "" : "|storage=" + storage);
}

std::string FabricKey(const std::string& nic, const std::string& uplink) {
  return nic.empty() && uplink.empty() ? "" : nic + "/" + uplink;
}

std::string RunKey(const nlohmann::ordered_json& r) {
  const auto limit = r.find("memory_limit_bytes");
  return RunKeyOf(r.value("file", ""), r.value("strategy_spec", ""), r.value("cache", ""),
                  r.value("rep", -1), r.value("procs", 1),
                  limit != r.end() && limit->is_number() ? limit->get<uint64_t>() : 0,
                  r.value("pattern", "replicated"), r.value("link", ""),
                  FabricKey(r.value("nic", ""), r.value("uplink", "")), r.value("storage", ""));
}

}  // namespace loadbench
