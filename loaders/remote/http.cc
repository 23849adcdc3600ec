#include "loaders/remote/http.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "loaders/base/text.h"

namespace loadbench {
namespace {

// The hex SHA-256 of an empty body.
constexpr const char* kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string TrimLine(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return std::string(s);
}

// "A-B" of a Content-Range "bytes A-B/SIZE" (SIZE a number, or '*' when unknown); "" for any
// other value.
std::string RangeOf(std::string_view v) {
  const auto digits = [](std::string_view d) {
    return !d.empty() &&
           std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!v.starts_with("bytes ")) return "";
  v.remove_prefix(6);
  const size_t slash = v.find('/'), dash = v.find('-');
  if (slash == std::string_view::npos || dash > slash) return "";
  const std::string_view size = v.substr(slash + 1);
  if (!digits(v.substr(0, dash)) || !digits(v.substr(dash + 1, slash - dash - 1)) ||
      !(size == "*" || digits(size))) {
    return "";
  }
  return std::string(v.substr(0, slash));
}

// The server's trouble, not the request's: worth asking again.
bool RetriedStatus(long status) {
  return status == 500 || status == 502 || status == 503 || status == 504;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

}  // namespace

long StallSeconds() {
  const char* v = std::getenv("LOADBENCH_HTTP_STALL_S");
  if (v == nullptr || *v == '\0') return 30;
  char* end = nullptr;
  const long s = std::strtol(v, &end, 10);
  return *end == '\0' && s >= 1 && s <= 3600 ? s : 30;
}

void TransferStats::Add(const HttpGet& get, bool retried) {
  CURL* h = get.handle();
  long connects = 0;
  curl_off_t total_us = 0, first_us = 0;
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
  curl_easy_getinfo(h, CURLINFO_TOTAL_TIME_T, &total_us);
  curl_easy_getinfo(h, CURLINFO_STARTTRANSFER_TIME_T, &first_us);
  ++requests;
  connections += static_cast<uint64_t>(std::max(0L, connects));
  latency_s.push_back(static_cast<double>(total_us) / 1e6);
  if (retried) {
    ++retries;
    return;
  }
  bytes_requested += get.requested();
  bytes_received += get.received();
  if (first_byte_s < 0 && !get.is_head()) first_byte_s = static_cast<double>(first_us) / 1e6;
  if (get.etag_missing() && etag_unchecked.empty()) {
    etag_unchecked = get.is_head() ? "the HEAD sent no ETag" : "a GET sent no ETag";
  }
}

nlohmann::json TransferStats::ToJson() const {
  nlohmann::json j = {
      {"requests", requests},
      {"retries", retries},
      {"connections", connections},
      {"bytes_requested", bytes_requested},
      {"bytes_received", bytes_received},
      {"first_byte_s", first_byte_s < 0 ? nlohmann::json() : nlohmann::json(first_byte_s)},
      {"request_latency_s",
       {{"p50", Percentile(latency_s, 0.50)},
        {"p90", Percentile(latency_s, 0.90)},
        {"p99", Percentile(latency_s, 0.99)},
        {"max", latency_s.empty() ? 0.0 : *std::max_element(latency_s.begin(), latency_s.end())}}},
      {"etag_checked", etag_unchecked.empty()}};
  if (!etag_unchecked.empty()) j["etag_unchecked"] = etag_unchecked;
  if (!credentials.empty()) j["credentials"] = credentials;
  return j;
}

HttpGet::HttpGet(const RemoteObject& obj, uint64_t offset, uint64_t len, std::byte* dst,
                 uint64_t cap, const std::string& etag, const Timeouts& t)
    : obj_(obj), offset_(offset), len_(len), dst_(dst), cap_(len ? len : cap), expect_etag_(etag) {
  Setup(t);
  if (len_ > 0) {
    const std::string range = fmt::format("{}-{}", offset_, offset_ + len_ - 1);
    curl_easy_setopt(h_, CURLOPT_RANGE, range.c_str());  // copied by libcurl
  }
}

HttpGet::HttpGet(const RemoteObject& obj, const Timeouts& t) : obj_(obj), is_head_(true) {
  Setup(t);
  curl_easy_setopt(h_, CURLOPT_NOBODY, 1L);
}

HttpGet::~HttpGet() {
  if (h_) curl_easy_cleanup(h_);
  curl_slist_free_all(headers_);
}

void HttpGet::Setup(const Timeouts& t) {
  GlobalInit();
  h_ = curl_easy_init();
  curl_easy_setopt(h_, CURLOPT_URL, obj_.url.c_str());
  curl_easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h_, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h_, CURLOPT_CONNECTTIMEOUT, t.connect_s);
  curl_easy_setopt(h_, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h_, CURLOPT_LOW_SPEED_TIME, t.stall_s);
  curl_easy_setopt(h_, CURLOPT_ERRORBUFFER, error_);
  curl_easy_setopt(h_, CURLOPT_HEADERFUNCTION, &HttpGet::OnHeader);
  curl_easy_setopt(h_, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(h_, CURLOPT_WRITEFUNCTION, &HttpGet::OnBody);
  curl_easy_setopt(h_, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(h_, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h_, CURLOPT_USERAGENT, "loadbench");
  if (!obj_.sigv4.empty()) {
    curl_easy_setopt(h_, CURLOPT_AWS_SIGV4, obj_.sigv4.c_str());
    curl_easy_setopt(h_, CURLOPT_USERPWD, obj_.userpwd.c_str());
    // S3 refuses a SigV4 request without x-amz-content-sha256, which libcurl before 8.x does
    // not send; as a header of ours libcurl signs it. Every request here has no body, and the
    // SHA-256 of nothing is also what libcurl puts in the canonical request as its payload hash.
    headers_ =
        curl_slist_append(headers_, fmt::format("x-amz-content-sha256: {}", kEmptySha256).c_str());
    if (!obj_.session_token.empty()) {
      headers_ =
          curl_slist_append(headers_,
                            fmt::format("x-amz-security-token: {}", obj_.session_token).c_str());
    }
  }
  if (const char* date = std::getenv("LOADBENCH_SIGV4_DATE"); date && *date) {
    // Tests of the signature fix its time, as botocore's are fixed.
    headers_ = curl_slist_append(headers_, fmt::format("x-amz-date: {}", date).c_str());
  }
  if (headers_) curl_easy_setopt(h_, CURLOPT_HTTPHEADER, headers_);
}

size_t HttpGet::OnHeader(char* p, size_t size, size_t n, void* self_ptr) {
  auto* self = static_cast<HttpGet*>(self_ptr);
  const std::string_view line(p, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue, say)
    const size_t sp = line.find(' ');
    self->status_ =
        sp == std::string_view::npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
    self->head_ = {};
    self->location_.clear();
    self->content_range_.reset();
    self->retry_after_s_ = -1;
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  const std::string name = Lower(line.substr(0, colon));
  const std::string value = TrimLine(line.substr(colon + 1));
  if (name == "etag") self->head_.etag = value;
  if (name == kChecksumMeta) self->head_.checksum = value;
  if (name == "location") self->location_ = value;
  if (name == "content-range") self->content_range_ = value;
  if (name == "retry-after") {  // seconds; a date is not waited for
    char* end = nullptr;
    const long secs = std::strtol(value.c_str(), &end, 10);
    if (!value.empty() && *end == '\0' && secs >= 0) self->retry_after_s_ = secs;
  }
  if (name == "content-length") self->head_.size = std::strtoull(value.c_str(), nullptr, 10);
  return size * n;
}

size_t HttpGet::OnBody(char* p, size_t size, size_t n, void* self_ptr) {
  auto* self = static_cast<HttpGet*>(self_ptr);
  const size_t bytes = size * n;
  const long want = self->len_ > 0 ? 206 : 200;
  if (self->status_ != want) {
    if (self->status_ == 200 && self->len_ > 0) {
      self->refused_ = "answered a ranged GET with 200 and the whole object: the server ignores "
                       "Range requests";
      return 0;
    }
    return bytes;  // an error document: its status says what went wrong
  }
  if (self->received_ == 0) self->refused_ = self->Refusal();
  if (!self->refused_.empty()) return 0;
  if (bytes > self->cap_ - self->received_) {
    self->refused_ = fmt::format("the server sent more than the {} bytes asked for", self->cap_);
    return 0;
  }
  std::memcpy(self->dst_ + self->received_, p, bytes);
  self->received_ += bytes;
  return bytes;
}

std::string HttpGet::Refusal() {
  if (!expect_etag_.empty() && head_.etag.empty()) {
    get_etag_missing_ = true;  // no ETag is no change: the load goes on, unchecked
  } else if (head_.etag != expect_etag_ && !expect_etag_.empty()) {
    return fmt::format("object changed during the load (ETag {}, then {})", Printable(expect_etag_),
                       Printable(head_.etag));
  }
  if (len_ == 0) return "";  // a whole GET: no range to check
  const std::string asked = fmt::format("{}-{}", offset_, offset_ + len_ - 1);
  if (!content_range_) {
    return fmt::format("the server sent a 206 without Content-Range for bytes {}", asked);
  }
  const std::string sent = RangeOf(*content_range_);
  if (sent.empty()) {
    return fmt::format("the server sent Content-Range '{}' for bytes {}",
                       Printable(*content_range_), asked);
  }
  if (sent != asked) return fmt::format("the server sent bytes {} for {}", sent, asked);
  return "";
}

bool HttpGet::etag_missing() const {
  return is_head_ ? status_ == 200 && head_.etag.empty() : get_etag_missing_;
}

Status HttpGet::Error(const std::string& why) const {
  return Status::IOError(fmt::format("{}: {}", Printable(obj_.name), why));
}

Status HttpGet::Finish(CURLcode code) {
  if (!refused_.empty()) return Error(refused_);
  const std::string detail = error_[0] ? error_ : curl_easy_strerror(code);
  switch (code) {
    case CURLE_OK:
      break;
    case CURLE_COULDNT_RESOLVE_HOST:
      return Error(fmt::format("the host does not resolve ({})", detail));
    case CURLE_COULDNT_CONNECT:
      return Error(fmt::format("nothing answers at {} ({})", obj_.endpoint, detail));
    case CURLE_OPERATION_TIMEDOUT:
      return Error(fmt::format("the server stalled: {} ({} of {} bytes received)", detail,
                               received_, len_ ? len_ : head_.size));
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
      return Error(fmt::format("the server closed the connection after {} of {} bytes ({})",
                               received_, len_ ? len_ : head_.size, detail));
    default:
      return Error(fmt::format("the request failed: {}", detail));
  }
  if (status_ >= 300 && status_ < 400) {
    return Status::BadInput(fmt::format(
        "{}: redirected (HTTP {} to '{}'); redirects are not followed: give the final URL",
        Printable(obj_.name), status_, Printable(location_)));
  }
  if (status_ == 404)
    return Status::BadInput(fmt::format("{}: missing (HTTP 404)", Printable(obj_.name)));
  if (status_ == 403) {
    return Error("HTTP 403 Forbidden: the credentials were refused or do not allow reading it" +
                 CredentialsHint(obj_));
  }
  if (RetriedStatus(status_)) return Error(fmt::format("HTTP {} after {} tries", status_, tries_));
  const long want = len_ > 0 ? 206 : 200;
  if (status_ != want) return Error(fmt::format("HTTP {} (expected {})", status_, want));
  if (len_ > 0 && received_ != len_) {
    return Error(fmt::format("the body ended after {} of {} bytes", received_, len_));
  }
  return Status::Ok();
}

bool HttpGet::Retryable(CURLcode code) const {
  return code == CURLE_OK && refused_.empty() && RetriedStatus(status_) && tries_ < kHttpTries;
}

std::chrono::milliseconds HttpGet::NextTry() {
  const std::chrono::milliseconds backoff = kFirstRetryWait * (1 << (tries_ - 1));
  const std::chrono::milliseconds asked = std::chrono::seconds(std::max(0L, retry_after_s_));
  ++tries_;
  status_ = 0;
  head_ = {};
  location_.clear();
  content_range_.reset();
  retry_after_s_ = -1;
  error_[0] = '\0';
  return std::min(std::max(backoff, asked), kLongestRetryWait);
}

Status HttpGet::Perform(TransferStats* stats) {
  for (;;) {
    const CURLcode code = curl_easy_perform(h_);
    const bool again = Retryable(code);
    if (stats) stats->Add(*this, again);
    if (!again) return Finish(code);
    std::this_thread::sleep_for(NextTry());
  }
}

Status HeadObject(const RemoteObject& obj, const Timeouts& t, ObjectHead* out,
                  TransferStats* stats) {
  HttpGet head(obj, t);
  LB_RETURN_IF_ERROR(head.Perform(stats));
  *out = head.head();
  return Status::Ok();
}

Status GetRange(const RemoteObject& obj, uint64_t offset, uint64_t len, std::byte* dst,
                const std::string& etag, const Timeouts& t, TransferStats* stats) {
  HttpGet get(obj, offset, len, dst, len, etag, t);
  return get.Perform(stats);
}

}  // namespace loadbench
