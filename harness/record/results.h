// The results folder: env.json written whole, runs.jsonl appended one run at a time and made
// durable before the next run starts, so an interrupted experiment loses nothing it finished.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench {

// Creates `dir` and its parents as needed.
Status MakeDirs(const std::string& dir);

// Writes `text` to `path` via a temporary file and rename, so that `path` holds either its old
// content or the whole new one. Any failure (a full disk, an I/O error, a quota) is kNotWritten,
// the temporary file removed.
Status WriteFileWhole(const std::string& path, const std::string& text);
// WriteFileWhole of `value`, pretty-printed.
Status WriteJsonFile(const std::string& path, const nlohmann::ordered_json& value);
// WriteFileWhole of the content of `from` (an unreadable `from` is kBadInput).
Status CopyFileWhole(const std::string& from, const std::string& to);

// Appends JSON objects, one per line, to a file. Each Append is a single write(2) followed by
// fdatasync, so a reader never sees half a line and a crash keeps every line already appended.
// An append that fails (a full disk, an I/O error, a quota) is cut back off the file, which
// then ends with its last whole line, and is kNotWritten.
class JsonlWriter final {
 public:
  Status Open(const std::string& path);
  Status Append(const nlohmann::ordered_json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  UniqueFd fd_;
};

// The identity of a run for resuming: file, strategy spec, cache, repetition, procs, memory
// limit, read pattern, link, fabric and storage; from those, or from a record of runs.jsonl.
std::string RunKeyOf(const std::string& file, const std::string& spec, const std::string& cache,
                     int rep, int procs, uint64_t memory_limit, const std::string& pattern,
                     const std::string& link = "", const std::string& fabric = "",
                     const std::string& storage = "");
// A [cluster]'s rates as part of a run's identity: "NIC/UPLINK", "" without a cluster.
std::string FabricKey(const std::string& nic, const std::string& uplink);
std::string RunKey(const nlohmann::ordered_json& record);

// Every line of runs.jsonl that is a JSON object, for reading only (nothing when the file does
// not exist).
std::vector<nlohmann::ordered_json> ReadRecords(const std::string& path);

// The identities (RunKey) of the runs runs.jsonl already holds, for resuming. A last line cut
// short by a crash is removed (appends are whole lines, so only a crash inside the write can
// leave one), saying so on stderr after `who`; any other line that is not a run record, or a
// run of another experiment, is kBadInput.
Status ReadRecorded(const std::string& path, const std::string& experiment, const std::string& who,
                    std::set<std::string>* keys, size_t* records);

}  // namespace loadbench
