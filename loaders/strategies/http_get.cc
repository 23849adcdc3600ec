// http_get: the whole object in one GET, streamed into one buffer as it arrives: what curl, a
// browser or a plain download does. One connection, one request; the object's header bytes come
// along with its tensors.
#include <fmt/format.h>

#include "loaders/blocks/object_load.h"
#include "loaders/remote/http.h"
#include "loaders/remote/ranges.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

class HttpGetLoader final : public ObjectLoader {
 public:
  using ObjectLoader::ObjectLoader;

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    RemoteObject obj;
    ObjectHead head;
    LB_RETURN_IF_ERROR(Open(path, table.file_size, &obj, &head));
    LB_RETURN_IF_ERROR(Allocate(head.size, path));
    HttpGet get(obj, 0, 0, region_.data(), head.size, head.etag, Timeouts{});
    LB_RETURN_IF_ERROR(get.Perform(&stats_));
    if (get.received() != head.size) {
      return Status::IOError(
          fmt::format("{}: the body ended after {} of {} bytes", path, get.received(), head.size));
    }
    ViewsIntoSpan(table, FileSpan{0, head.size}, region_.data(), views);
    return Status::Ok();
  }
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
