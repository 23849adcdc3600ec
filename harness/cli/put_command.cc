// `loadbench put FILE s3://BUCKET/KEY`: a local file into a bucket, as experiments put their
// files into their server's (harness/run/remote_files.h): one signed PUT with the file's xxh3-64
// in the object's metadata, skipped when the object there already has the same size and
// checksum. For a model that is not generated where the bucket is (a real endpoint).
#include <fmt/format.h>
#include <xxhash.h>

#include <memory>
#include <vector>

#include "harness/cli/commands.h"
#include "loaders/base/byte_source.h"
#include "loaders/remote/put.h"
#include "loaders/remote/url.h"

namespace loadbench::cli {
namespace {

// The xxh3-64 of every byte of the file, 16 hex digits.
Status FileChecksum(const std::string& path, std::string* out) {
  std::unique_ptr<FileSource> src;
  LB_RETURN_IF_ERROR(FileSource::Open(path, &src));
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<char> buf(8 << 20);
  for (uint64_t at = 0; at < src->size(); at += buf.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), src->size() - at));
    LB_RETURN_IF_ERROR(src->ReadAt(buf.data(), n, at));
    XXH3_64bits_update(state.get(), buf.data(), n);
  }
  *out = fmt::format("{:016x}", XXH3_64bits_digest(state.get()));
  return Status::Ok();
}

}  // namespace

int PutCommand(const PutFlags& f) {
  if (!f.name.starts_with("s3://")) {
    return ReportError("put",
                       Status::BadInput(fmt::format("{}: not an s3://BUCKET/KEY name", f.name)));
  }
  std::string sum;
  if (Status s = FileChecksum(f.file, &sum); !s.ok()) return ReportError("put", s);
  bool put = false;
  if (Status s = PutIfChanged(f.file, f.name, sum, &put); !s.ok()) return ReportError("put", s);
  fmt::print("{} {} (xxh3 {})\n", put ? "put" : "already there:", f.name, sum);
  return 0;
}

}  // namespace loadbench::cli
