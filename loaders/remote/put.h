// Putting a local file into a bucket (one PUT, signed as every request is): how generated files
// get to an S3 endpoint, reused when the object there already has the same size and checksum.
#pragma once

#include <cstdint>
#include <string>

#include "loaders/base/status.h"
#include "loaders/remote/url.h"

namespace loadbench {

// Puts the file at `local` as `obj`, its checksum (16 hex digits) in kChecksumMeta. Errors
// name the object or the file and the reason, never a credential.
Status PutObject(const RemoteObject& obj, const std::string& local, const std::string& checksum);

// Puts `local` at `name` (s3://BUCKET/KEY) unless the object there already has its size and
// `checksum`; *put says which.
Status PutIfChanged(const std::string& local, const std::string& name, const std::string& checksum,
                    bool* put);

}  // namespace loadbench
