#include "loaders/remote/source.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "loaders/base/text.h"

namespace loadbench {

Status RemoteSource::Open(const std::string& name, std::unique_ptr<RemoteSource>* out) {
  RemoteObject obj;
  LB_RETURN_IF_ERROR(ResolveRemote(name, &obj));
  ObjectHead head;
  TransferStats stats;
  LB_RETURN_IF_ERROR(HeadObject(obj, Timeouts{}, &head, &stats));
  out->reset(new RemoteSource(std::move(obj), head.size, head.etag));
  (*out)->stats_ = stats;
  return Status::Ok();
}

Status RemoteSource::ReadAt(void* buf, size_t len, uint64_t offset) const {
  if (offset > size() || len > size() - offset) {
    return Status::BadInput(
        fmt::format("{}: truncated: {} bytes at offset {} run past its end ({})", Printable(name()),
                    len, offset, size()));
  }
  if (len == 0) return Status::Ok();
  Block* b = first_.Holds(offset, len) ? &first_ : last_.Holds(offset, len) ? &last_ : nullptr;
  if (b == nullptr) {
    b = offset == 0 ? &first_ : &last_;
    const uint64_t n = std::min<uint64_t>(std::max<uint64_t>(len, block_), size() - offset);
    block_ = std::min(2 * block_, kMaxBlock);
    b->bytes.assign(n, std::byte{0});
    b->at = offset;
    const Status s = GetRange(obj_, offset, n, b->bytes.data(), etag_, Timeouts{}, &stats_);
    if (!s.ok()) {
      b->bytes.clear();
      return s;
    }
  }
  std::memcpy(buf, b->bytes.data() + (offset - b->at), len);
  return Status::Ok();
}

Status OpenSource(const std::string& name, std::unique_ptr<ByteSource>* out) {
  if (IsRemote(name)) {
    std::unique_ptr<RemoteSource> r;
    LB_RETURN_IF_ERROR(RemoteSource::Open(name, &r));
    *out = std::move(r);
    return Status::Ok();
  }
  std::unique_ptr<FileSource> f;
  LB_RETURN_IF_ERROR(FileSource::Open(name, &f));
  *out = std::move(f);
  return Status::Ok();
}

}  // namespace loadbench
