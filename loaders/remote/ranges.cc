#include "loaders/remote/ranges.h"

#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "loaders/base/text.h"

namespace loadbench {

std::vector<RangeRequest> ChunkRange(size_t object, uint64_t begin, uint64_t end, uint64_t chunk,
                                     std::byte* dst) {
  std::vector<RangeRequest> out;
  for (uint64_t at = begin; at < end; at += chunk) {
    const uint64_t len = std::min(chunk, end - at);
    out.push_back({object, at, len, dst + (at - begin)});
  }
  return out;
}

Status OpenObject(const std::string& path, uint64_t size, RemoteObject* obj, ObjectHead* head,
                  TransferStats* stats) {
  if (!IsRemote(path)) {
    return Status::Unsupported(fmt::format(
        "{}: a local file; the http_* strategies read s3:// and http(s):// objects", path));
  }
  LB_RETURN_IF_ERROR(ResolveRemote(path, obj));
  LB_RETURN_IF_ERROR(HeadObject(*obj, Timeouts{}, head, stats));
  if (head->size != size) {
    return Status::IOError(
        fmt::format("{}: object changed: {} bytes now, {} when its header was read",
                    Printable(path), head->size, size));
  }
  return Status::Ok();
}

namespace {

struct InFlight {
  RangeRequest req;
  std::unique_ptr<HttpGet> get;
};

// Ends every request still in flight.
void Abandon(CURLM* m, std::map<CURL*, InFlight>* flying) {
  for (auto& [h, f] : *flying) curl_multi_remove_handle(m, h);
  flying->clear();
}

}  // namespace

Status RangeRunner::Run(const std::function<bool(RangeRequest*)>& next,
                        const std::function<Status(const RangeRequest&)>& done) const {
  std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)> multi(curl_multi_init(),
                                                              &curl_multi_cleanup);
  CURLM* m = multi.get();
  std::map<CURL*, InFlight> flying;
  Status failed = Status::Ok();
  for (;;) {
    while (failed.ok() && static_cast<int>(flying.size()) < concurrency) {
      RangeRequest r;
      if (!next(&r)) break;
      auto get = std::make_unique<HttpGet>(objects[r.object], r.offset, r.len, r.dst, r.len,
                                           etags[r.object], timeouts);
      CURL* h = get->handle();
      curl_multi_add_handle(m, h);
      flying.emplace(h, InFlight{r, std::move(get)});
    }
    if (flying.empty()) break;
    int running = 0;
    curl_multi_perform(m, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      auto it = flying.find(msg->easy_handle);
      InFlight f = std::move(it->second);
      flying.erase(it);
      curl_multi_remove_handle(m, msg->easy_handle);
      Status s = f.get->Finish(msg->data.result);
      if (stats) stats->Add(*f.get);
      if (s.ok()) s = done(f.req);
      if (!s.ok() && failed.ok()) failed = s;
    }
    if (!failed.ok()) {
      Abandon(m, &flying);
      return failed;
    }
    if (running > 0) curl_multi_poll(m, nullptr, 0, 1000, nullptr);
  }
  return failed;
}

}  // namespace loadbench
