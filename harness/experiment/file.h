// A model file made ready for runs: its tensor table, the reference checksum every run must
// give, and the checksum of each reader's part under a read pattern.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/format/format.h"
#include "loaders/use/part.h"

namespace loadbench {

struct PreparedFile {
  std::string path;  // absolute
  // What the readers open when it is not `path`: the file's name through a server (an s3:// or
  // http:// name, harness/run/remote_files.h); the table's shards are then read through it.
  std::string read_as;
  // On a storage the tool made (harness/storage/storage.h): the model's own path, which its
  // records name (so that its runs pair with each other across the storage's rounds), while
  // `path` is where the copy on the storage is; else empty.
  std::string origin;
  TensorTable table;  // expected_checksum always set once prepared
  std::string checksum_source;
  // The checksum of each reader's part under a read pattern (loaders/use/part.h), by
  // PartsKey; replicated readers check the model's.
  std::map<std::string, std::vector<uint64_t>> part_checksums;
};

// "tp/4": the key of part_checksums for `readers` readers by `pattern`.
std::string PartsKey(const ReadPattern& pattern, int readers);

// Computes part_checksums[PartsKey(pattern, readers)] of `f` once: kBadInput naming the file
// when the pattern cannot split it among that many readers.
Status PrepareParts(const ReadPattern& pattern, int readers, PreparedFile* f);

// Reads and checks the file's table, checks that its residency can be measured (every run
// checks its cache state), and, for a file that stores no checksum, reads it once with plain
// preads for the reference every run must match. `who` prefixes the note printed before that
// read ("loadbench run"). Bad input is kBadInput, nothing written.
Status PrepareFile(const std::string& path, const std::string& who, PreparedFile* out);

// env.json's description of a prepared file.
nlohmann::ordered_json FileEnv(const PreparedFile& f);

// A file's path as runs.jsonl records it (absolute, links resolved), for a file that may not
// exist yet.
std::string RecordedPath(const std::string& path);

}  // namespace loadbench
