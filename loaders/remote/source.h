// A model's bytes by name: a local path, or a remote object (loaders/remote/url.h) read with
// ranged GETs while its header is parsed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loaders/base/byte_source.h"
#include "loaders/remote/http.h"
#include "loaders/remote/url.h"

namespace loadbench {

// A remote object read in ranged GETs, each checked against the ETag its HEAD gave. Reads are
// served from the first block (the object's start, where every header begins) or the last
// block fetched when they fall inside one. The first block is kFirstBlock bytes, enough for
// most headers, and each block after it twice the one before up to kMaxBlock (or the read,
// when larger), so that a header read field by field costs a few requests, and a small header
// costs the wire no more than 64 KiB: every node of a fleet reads the model's table from the
// store, through the store's one uplink (a fixed 1 MiB block was 8 MiB more through it at 8
// nodes).
class RemoteSource final : public ByteSource {
 public:
  static constexpr uint64_t kFirstBlock = 64ull << 10;
  static constexpr uint64_t kMaxBlock = 4ull << 20;
  static Status Open(const std::string& name, std::unique_ptr<RemoteSource>* out);
  Status ReadAt(void* buf, size_t len, uint64_t offset) const override;

  const RemoteObject& object() const { return obj_; }
  const std::string& etag() const { return etag_; }
  const TransferStats& stats() const { return stats_; }

 private:
  RemoteSource(RemoteObject obj, uint64_t size, std::string etag)
      : ByteSource(obj.name, size), obj_(std::move(obj)), etag_(std::move(etag)) {}
  RemoteObject obj_;
  std::string etag_;
  struct Block {
    std::vector<std::byte> bytes;
    uint64_t at = 0;
    bool Holds(uint64_t offset, size_t len) const {
      return offset >= at && offset + len <= at + bytes.size();
    }
  };
  mutable Block first_, last_;
  mutable uint64_t block_ = kFirstBlock;  // the next block's least size
  mutable TransferStats stats_;
};

// `name` opened: a FileSource for a local path, a RemoteSource for an s3:// or http(s):// name.
Status OpenSource(const std::string& name, std::unique_ptr<ByteSource>* out);

}  // namespace loadbench
