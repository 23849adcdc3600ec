#include "loaders/remote/ranges.h"

#include <algorithm>
#include <chrono>
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
  if (stats != nullptr && !obj->credentials.empty()) stats->credentials = obj->credentials;
  LB_RETURN_IF_ERROR(HeadObject(*obj, Timeouts{}, head, stats));
  if (head->size != size) {
    return Status::IOError(
        fmt::format("{}: object changed: {} bytes now, {} when its header was read",
                    Printable(path), head->size, size));
  }
  return Status::Ok();
}

namespace {

using Clock = std::chrono::steady_clock;

struct InFlight {
  RangeRequest req;
  std::unique_ptr<HttpGet> get;
};

// Requests to be made again (answered 5xx), by when.
using Waiting = std::multimap<Clock::time_point, InFlight>;

// Ends every request still in flight.
void Abandon(CURLM* m, std::map<CURL*, InFlight>* flying) {
  for (auto& [h, f] : *flying) curl_multi_remove_handle(m, h);
  flying->clear();
}

// The requests whose wait is over, in flight again.
void Resume(CURLM* m, Waiting* waiting, std::map<CURL*, InFlight>* flying) {
  while (!waiting->empty() && waiting->begin()->first <= Clock::now()) {
    InFlight f = std::move(waiting->begin()->second);
    waiting->erase(waiting->begin());
    CURL* h = f.get->handle();
    curl_multi_add_handle(m, h);
    flying->emplace(h, std::move(f));
  }
}

// How long to wait for the transfers (at most 1 s) before the next request's wait is over.
int PollMs(const Waiting& waiting) {
  if (waiting.empty()) return 1000;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(waiting.begin()->first - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000));
}

}  // namespace

Status RangeRunner::Run(const std::function<bool(RangeRequest*)>& next,
                        const std::function<Status(const RangeRequest&)>& done) const {
  std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)> multi(curl_multi_init(),
                                                              &curl_multi_cleanup);
  CURLM* m = multi.get();
  std::map<CURL*, InFlight> flying;
  Waiting waiting;
  Status failed = Status::Ok();
  for (;;) {
    Resume(m, &waiting, &flying);
    while (failed.ok() && static_cast<int>(flying.size() + waiting.size()) < concurrency) {
      RangeRequest r;
      if (!next(&r)) break;
      auto get = std::make_unique<HttpGet>(objects[r.object], r.offset, r.len, r.dst, r.len,
                                           etags[r.object], timeouts);
      CURL* h = get->handle();
      curl_multi_add_handle(m, h);
      flying.emplace(h, InFlight{r, std::move(get)});
    }
    if (flying.empty() && waiting.empty()) break;
    int running = 0;
    curl_multi_perform(m, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      const CURLcode code = msg->data.result;
      auto it = flying.find(msg->easy_handle);
      InFlight f = std::move(it->second);
      flying.erase(it);
      curl_multi_remove_handle(m, f.get->handle());
      const bool again = f.get->Retryable(code);
      if (stats) stats->Add(*f.get, again);
      if (again) {
        const Clock::time_point at = Clock::now() + f.get->NextTry();
        waiting.emplace(at, std::move(f));
        continue;
      }
      Status s = f.get->Finish(code);
      if (s.ok()) s = done(f.req);
      if (!s.ok() && failed.ok()) failed = s;
    }
    if (!failed.ok()) {
      Abandon(m, &flying);
      return failed;
    }
    if (running > 0 || !waiting.empty()) curl_multi_poll(m, nullptr, 0, PollMs(waiting), nullptr);
  }
  return failed;
}

}  // namespace loadbench
