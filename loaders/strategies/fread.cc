// fread + memcpy: stdio reads through one fixed temporary buffer, and each chunk is copied into
// a buffer per tensor. The traditional path: one copy more than needed, and (with malloc) every
// page of every tensor buffer is a fresh anonymous page that faults on first write.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/blocks/destination.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

class FreadLoader final : public ChunkedCopy {
 public:
  using ChunkedCopy::ChunkedCopy;

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    // Opened as every strategy opens a file (a FIFO or device refused, never waited on), then
    // handed to stdio.
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
    std::unique_ptr<FILE, FileCloser> file(::fdopen(fd.get(), "rb"));
    if (!file) return Status::FromErrno(path, errno);
    fd.release();  // the stream owns it now
    LB_RETURN_IF_ERROR(buffers_.Allocate(kind_, table, path));
    std::unique_ptr<std::byte[]> temp(new std::byte[chunk_bytes_]);
    uint64_t pos = 0;  // where the stream is, so that we seek only when tensors are not adjacent
    auto read = [&](const TensorInfo& t, uint64_t at, std::byte* dst, uint64_t len) {
      if (pos != at) {
        if (::fseeko(file.get(), static_cast<off_t>(at), SEEK_SET) != 0) {
          return Status::FromErrno(fmt::format("{}: seek to {}", path, at), errno);
        }
        pos = at;
      }
      const size_t got = std::fread(temp.get(), 1, len, file.get());
      if (got != len) {
        if (std::ferror(file.get())) {
          return Status::FromErrno(fmt::format("{}: read at {}", path, pos), errno);
        }
        return Status::BadInput(
            fmt::format("{}: truncated at {} in tensor '{}'", path, pos + got, t.name));
      }
      std::memcpy(dst, temp.get(), got);
      pos += got;
      return Status::Ok();
    };
    return buffers_.Fill(table, chunk_bytes_, read, views);
  }
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "fread",
    .summary = "fread through a fixed temporary buffer, memcpy into one buffer per tensor",
    .options = {{"chunk", OptionSpec::Kind::kBytes, "1MiB", "size of the temporary read buffer"},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<FreadLoader>(p);
    },
    .flags = kEager | kAllocates,
}));

}  // namespace loadbench
