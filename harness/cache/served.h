// Remote models served from this machine: which local file a server here reads for an object,
// so that a cold remote run can drop and check the server's side of the page cache too (client
// and server share one page cache on one machine).
#pragma once

#include <string>

namespace loadbench {

// Objects whose names start with `prefix` ("http://127.0.0.1:8080/", "s3://bucket/") are read
// by a server on this machine from `folder` + the rest of the name + `suffix` (s3rver keeps
// an object KEY as KEY._S3rver_object). Registered by whoever started the server; a later
// registration of the same prefix replaces it.
void RegisterServed(const std::string& prefix, const std::string& folder,
                    const std::string& suffix);
void UnregisterServed(const std::string& prefix);

// The local file behind a model's shard: for a remote object, or a file in a mount of a bucket,
// the file a registered server reads it from; the path itself for any other local file; empty
// for an object served elsewhere, whose cache cannot be seen from here.
std::string LocalFileOf(const std::string& shard_path);

}  // namespace loadbench
