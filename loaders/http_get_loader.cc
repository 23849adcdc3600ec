// http_get: the whole object in one GET, streamed into one buffer as it arrives: what curl, a
// browser or a plain download does. One connection, one request; the object's header bytes come
// along with its tensors.
#include <fmt/format.h>

#include "loaders/base/destination.h"
#include "loaders/loader.h"
#include "loaders/remote/http.h"
#include "loaders/remote/ranges.h"

namespace loadbench {
namespace {

class HttpGetLoader final : public Loader {
 public:
  explicit HttpGetLoader(const Params& params) : kind_(BufferKindOf(params)) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    RemoteObject obj;
    ObjectHead head;
    LB_RETURN_IF_ERROR(OpenObject(path, table.file_size, &obj, &head, &stats_));
    etag_ = head.etag;
    LB_RETURN_IF_ERROR(Region::Allocate(kind_, head.size, path, &region_));
    HttpGet get(obj, 0, 0, region_.data(), head.size, head.etag, Timeouts{});
    LB_RETURN_IF_ERROR(get.Perform(&stats_));
    if (get.received() != head.size) {
      return Status::IOError(
          fmt::format("{}: the body ended after {} of {} bytes", path, get.received(), head.size));
    }
    ViewsIntoSpan(table, FileSpan{0, head.size}, region_.data(), views);
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    nlohmann::json d = stats_.ToJson();
    d["etag"] = etag_;
    return d;
  }

 private:
  BufferKind kind_;
  Region region_;
  TransferStats stats_;
  std::string etag_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "http_get",
    .summary = "one GET of the whole object (s3:// or http(s)://) streamed into one buffer",
    .options = {BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<HttpGetLoader>(p);
    },
    .flags = kEager | kAllocates | kRemote,
}));

}  // namespace loadbench
