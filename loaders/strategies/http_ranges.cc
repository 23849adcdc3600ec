// http_ranges: ranged GETs of `chunk` bytes with `concurrency` requests in flight, each written
// straight into its place in one buffer of the tensor bytes: the design of Run:ai's Model
// Streamer (8 MiB ranges, 8 to 32 in flight) and of the AWS CRT client, which open several
// connections because one S3 connection carries only about 90 MB/s.
#include <fmt/format.h>

#include "loaders/blocks/object_load.h"
#include "loaders/remote/ranges.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

class HttpRangesLoader final : public ObjectLoader {
 public:
  explicit HttpRangesLoader(const Params& params)
      : ObjectLoader(params),
        chunk_(params.Bytes("chunk")),
        concurrency_(static_cast<int>(params.Int("concurrency"))) {}

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    std::vector<RemoteObject> objects(1);
    ObjectHead head;
    LB_RETURN_IF_ERROR(Open(path, table.file_size, &objects[0], &head));
    const std::vector<std::string> etags = {head.etag};
    const FileSpan span = TensorSpan(table, 1);
    LB_RETURN_IF_ERROR(Allocate(span.size(), path));
    const std::vector<RangeRequest> reqs =
        ChunkRange(0, span.begin, span.end, chunk_, region_.data());
    size_t next = 0;
    const RangeRunner runner{objects, etags, concurrency_, Timeouts{}, &stats_};
    LB_RETURN_IF_ERROR(runner.Run(
        [&](RangeRequest* r) {
          if (next == reqs.size()) return false;
          *r = reqs[next++];
          return true;
        },
        [](const RangeRequest&) { return Status::Ok(); }));
    ViewsIntoSpan(table, span, region_.data(), views);
    return Status::Ok();
  }

 private:
  uint64_t chunk_;
  int concurrency_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "http_ranges",
    .summary = "ranged GETs of `chunk` bytes, `concurrency` in flight, each into its place",
    .options = {{"chunk", OptionSpec::Kind::kBytes, "8MiB", "bytes per ranged GET"},
                {"concurrency", OptionSpec::Kind::kInt, "8", "requests in flight", {}, 1, 256},
                BufferOption()},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<HttpRangesLoader>(p);
    },
    .flags = kEager | kAllocates | kRemote,
}));

}  // namespace loadbench
