#include "loaders/base/byte_source.h"

namespace loadbench {

Status FileSource::ReadAt(void* buf, size_t len, uint64_t offset) const {
  return PreadExact(fd_, name(), buf, len, offset);
}

Status FileSource::Open(const std::string& path, std::unique_ptr<FileSource>* out) {
  UniqueFd fd;
  LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
  uint64_t size = 0;
  LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
  auto src = std::make_unique<FileSource>(fd.get(), path, size);
  src->owned_ = std::move(fd);
  *out = std::move(src);
  return Status::Ok();
}

}  // namespace loadbench
