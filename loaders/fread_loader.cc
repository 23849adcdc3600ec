// fread + memcpy: stdio reads through one fixed temporary buffer, and each chunk is copied into
// a malloc'd buffer per tensor. The traditional path: one copy more than needed, and every page
// of every tensor buffer is a fresh anonymous page that faults on first write.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "loaders/loader.h"

namespace loadbench {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

class FreadLoader final : public Loader {
 public:
  explicit FreadLoader(const Params& params) : buffer_bytes_(params.Bytes("buffer")) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rbe"));
    if (!file) return Status::FromErrno(path, errno);
    std::unique_ptr<std::byte[]> temp(new std::byte[buffer_bytes_]);
    uint64_t pos = 0;  // where the stream is, so that we seek only when tensors are not adjacent
    for (const auto& t : table.tensors) {
      // malloc(0) may return nullptr; one byte keeps "nullptr means out of memory" true.
      std::unique_ptr<void, FreeDeleter> buf(std::malloc(t.size == 0 ? 1 : t.size));
      if (!buf) return Status::IOError(fmt::format("{}: out of memory for tensor '{}' ({} bytes)",
                                                   path, t.name, t.size));
      if (pos != t.offset) {
        if (::fseeko(file.get(), static_cast<off_t>(t.offset), SEEK_SET) != 0) {
          return Status::FromErrno(fmt::format("{}: seek to {}", path, t.offset), errno);
        }
        pos = t.offset;
      }
      auto* dst = static_cast<std::byte*>(buf.get());
      uint64_t done = 0;
      while (done < t.size) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(buffer_bytes_, t.size - done));
        size_t got = std::fread(temp.get(), 1, want, file.get());
        if (got != want) {
          if (std::ferror(file.get())) {
            return Status::FromErrno(fmt::format("{}: read at {}", path, pos), errno);
          }
          return Status::BadInput(fmt::format("{}: truncated at {} in tensor '{}'", path,
                                              pos + got, t.name));
        }
        std::memcpy(dst + done, temp.get(), got);
        done += got;
        pos += got;
      }
      views->emplace_back(dst, t.size);
      buffers_.push_back(std::move(buf));
    }
    return Status::Ok();
  }

 private:
  uint64_t buffer_bytes_;
  std::vector<std::unique_ptr<void, FreeDeleter>> buffers_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "fread",
    .summary = "fread through a fixed temporary buffer, memcpy into one malloc'd buffer per tensor",
    .options = {{"buffer", OptionSpec::Kind::kBytes, "1MiB", "size of the temporary read buffer"}},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<FreadLoader>(p);
    },
}));

}  // namespace loadbench
