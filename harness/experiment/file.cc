#include "harness/experiment/file.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "loaders/base/units.h"
#include "loaders/format/checksum.h"
#include "loaders/format/model.h"
#include "loaders/remote/url.h"
#include "loaders/use/part.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

std::string AbsolutePath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

nlohmann::ordered_json ShardsJson(const TensorTable& t) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ShardInfo& s : t.shards) {
    out.push_back({{"path", s.path},
                   {"file_bytes", s.file_size},
                   {"tensor_count", s.tensor_count},
                   {"tensor_bytes", s.tensor_bytes}});
  }
  return out;
}

}  // namespace

Status PrepareFile(const std::string& path, const std::string& who, PreparedFile* out) {
  PreparedFile f;
  LB_RETURN_IF_ERROR(ReadModel(path, &f.table));
  f.path = AbsolutePath(path);
  ModelResidency probe;
  if (Status s = MeasureModelResidency(f.table, &probe); !s.ok()) {
    return Status::BadInput(
        fmt::format("{}; run as root or on a copy of the file you own", s.message()));
  }
  f.checksum_source = "stored in the file";
  if (!f.table.expected_checksum) {
    // A file that stores no checksum (safetensors and GGUF from other tools) is read once now
    // with plain preads; every run must then give the same checksum, so that all strategies
    // are checked against one reference and against each other.
    fmt::print(stderr,
               "{}: {} stores no checksum; reading it once for the reference checksum "
               "({})\n",
               who, f.path, FormatBytes(f.table.tensor_bytes));
    const auto t0 = Clock::now();
    uint64_t sum = 0;
    LB_RETURN_IF_ERROR(ChecksumModel(f.table, &sum));
    f.table.expected_checksum = sum;
    f.checksum_source =
        fmt::format("reference read by the runner before the runs (pread, {:.2f} s)",
                    std::chrono::duration<double>(Clock::now() - t0).count());
  }
  *out = std::move(f);
  return Status::Ok();
}

nlohmann::ordered_json FileEnv(const PreparedFile& f) {
  return {{"path", f.path},
          {"format", f.table.format},
          {"file_bytes", f.table.file_size},
          {"tensor_count", f.table.tensors.size()},
          {"tensor_bytes", f.table.tensor_bytes},
          {"checksum", fmt::format("{:016x}", *f.table.expected_checksum)},
          {"checksum_source", f.checksum_source},
          {"layout", f.table.layout},
          {"shards", ShardsJson(f.table)}};
}

std::string PartsKey(const ReadPattern& pattern, int readers) {
  return fmt::format("{}/{}", pattern.Text(), readers);
}

Status PrepareParts(const ReadPattern& pattern, int readers, PreparedFile* f) {
  const std::string key = PartsKey(pattern, readers);
  if (readers <= 1 || pattern.replicated() || f->part_checksums.count(key)) {
    return Status::Ok();
  }
  std::vector<uint64_t> sums;
  for (int k = 0; k < readers; ++k) {
    TensorTable part;
    LB_RETURN_IF_ERROR(PartOf(f->path, f->table, pattern, k, readers, &part));
    uint64_t sum = 0;
    LB_RETURN_IF_ERROR(ChecksumModel(part, &sum));
    sums.push_back(sum);
  }
  f->part_checksums[key] = std::move(sums);
  return Status::Ok();
}

std::string RecordedPath(const std::string& path) {
  if (IsRemote(path)) return path;
  std::error_code ec;
  const std::filesystem::path p =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  return ec ? path : p.string();
}

}  // namespace loadbench
