// The results folder: env.json written whole, runs.jsonl appended one run at a time and made
// durable before the next run starts, so an interrupted experiment loses nothing it finished.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

// Creates `dir` and its parents as needed.
Status MakeDirs(const std::string& dir);

// Writes `value` (pretty-printed) to `path` via a temporary file and rename.
Status WriteJsonFile(const std::string& path, const nlohmann::ordered_json& value);

// Appends JSON objects, one per line, to a file. Each Append is a single write(2) followed by
// fdatasync, so a reader never sees half a line and a crash keeps every line already appended.
class JsonlWriter final {
 public:
  Status Open(const std::string& path);
  Status Append(const nlohmann::ordered_json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  UniqueFd fd_;
};

}  // namespace loadbench
