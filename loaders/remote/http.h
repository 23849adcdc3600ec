// Requests of remote objects through libcurl: a HEAD for the object's size and ETag, and GETs
// (whole, or of a byte range) written straight into their place in the destination. Every
// request is checked: the status it must have (200 for a whole object, 206 for a range; a
// server that answers a range with 200 and the whole object is refused, never mis-assembled),
// the range a 206 says it holds (its Content-Range must be the one asked for), the bytes it must
// carry (a body shorter than asked is an error), and the object's ETag (one
// that changes between requests is "object changed during the load"; an answer without one is
// no change, and leaves the load unchecked). Redirects are not followed: the error names where
// the server pointed. A request answered 500, 502, 503 or 504 (S3's 503 SlowDown among them) is
// made again, a few times, after a wait (kHttpTries); 4xx never. Errors name the object and the
// reason, never a credential.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/remote/url.h"

namespace loadbench {

class HttpGet;

// A request answered 500, 502, 503 or 504 is made kHttpTries times in all before it fails: again
// after kFirstRetryWait, then each time after twice the wait before, or after the answer's
// Retry-After when that is longer, never after more than kLongestRetryWait.
inline constexpr int kHttpTries = 4;
inline constexpr std::chrono::milliseconds kFirstRetryWait{100};
inline constexpr std::chrono::milliseconds kLongestRetryWait{2000};

// What one load's requests did, for the run's `details` (docs/results-format.md).
struct TransferStats {
  uint64_t requests = 0;
  uint64_t retries = 0;           // requests answered 500, 502, 503 or 504, and made again
  uint64_t connections = 0;       // new connections opened (none kept from another run)
  uint64_t bytes_requested = 0;   // what the ranges asked for (the object's size for a whole GET)
  uint64_t bytes_received = 0;    // body bytes that arrived, over-read included
  double first_byte_s = -1;       // the first GET's time to its first byte (a HEAD's is not)
  std::vector<double> latency_s;  // each request's whole time, in completion order
  // Why some answer was not checked against the object's ETag ("the HEAD sent no ETag", "a GET
  // sent no ETag": the first seen); empty when every one was.
  std::string etag_unchecked;
  // Where an s3:// object's credentials came from (RemoteObject::credentials): set by
  // OpenObject; empty for http(s):// names.
  std::string credentials;

  // Adds the request that ended on `get`'s handle; `retried`: it is to be made again (counted
  // in `retries`, its bytes not asked for, nor received, until then).
  void Add(const HttpGet& get, bool retried);
  // {"requests", "retries", "connections", "bytes_requested", "bytes_received", "first_byte_s",
  //  "request_latency_s": {"p50", "p90", "p99", "max"}, "etag_checked"}, "etag_unchecked"
  //  when it was not, and "credentials" when set.
  nlohmann::json ToJson() const;
};

// The object's size and ETag, from a HEAD.
struct ObjectHead {
  uint64_t size = 0;
  std::string etag;
  std::string checksum;  // x-amz-meta-loadbench-xxh3, as `put` stores it; empty when absent
};

// The metadata header `put` stores the object's checksum in (16 hex digits of its xxh3-64).
inline constexpr const char* kChecksumMeta = "x-amz-meta-loadbench-xxh3";

// How long a request may go with no byte moving before its server is said to have stalled:
// 30 s, or LOADBENCH_HTTP_STALL_S (whole seconds, 1 to 3600) where set, as the tests of a
// stalled server set it to end in seconds.
long StallSeconds();

// How long a request may wait: to connect, and with no byte moving (a stalled server).
struct Timeouts {
  long connect_s = 10;
  long stall_s = StallSeconds();
};

// One GET (or HEAD) of `obj` on its own easy handle, to run alone (Perform) or in a multi handle.
class HttpGet {
 public:
  // A GET of [offset, offset + len) into dst (which holds len bytes), or with len == 0 of the
  // whole object into dst (which holds `cap` bytes). `etag`, when not empty, is what the object
  // must still be: an answer with another is refused, one with none taken unchecked.
  HttpGet(const RemoteObject& obj, uint64_t offset, uint64_t len, std::byte* dst, uint64_t cap,
          const std::string& etag, const Timeouts& t);
  // A HEAD.
  HttpGet(const RemoteObject& obj, const Timeouts& t);
  ~HttpGet();
  HttpGet(const HttpGet&) = delete;
  HttpGet& operator=(const HttpGet&) = delete;

  CURL* handle() const { return h_; }
  // Runs the request here, again while Retryable (waiting NextTry's time between), and Finish;
  // each try is added to `stats` when given.
  Status Perform(TransferStats* stats = nullptr);
  // After a try that ended with `code`: whether it was answered 500, 502, 503 or 504 and has
  // tries left.
  bool Retryable(CURLcode code) const;
  // Readies the handle for its next try (the answer's state cleared), and returns how long to
  // wait before it.
  std::chrono::milliseconds NextTry();
  // After the transfer ended with `code`: Ok when it delivered all it had to, else the reason.
  Status Finish(CURLcode code);

  uint64_t offset() const { return offset_; }
  uint64_t requested() const { return len_ ? len_ : cap_; }  // 0 for a HEAD
  uint64_t received() const { return received_; }
  const ObjectHead& head() const { return head_; }
  bool is_head() const { return is_head_; }
  // Whether the answer carried no ETag where one was to be checked: a HEAD's that succeeded
  // (nothing to check the load's answers against), or a GET's when an ETag was expected.
  bool etag_missing() const;

 private:
  void Setup(const Timeouts& t);
  static size_t OnHeader(char* p, size_t size, size_t n, void* self);
  static size_t OnBody(char* p, size_t size, size_t n, void* self);
  Status Error(const std::string& why) const;
  // Why the answer's first body byte is not to be taken, or "": an ETag other than expected, a
  // range's Content-Range missing or not the range asked for.
  std::string Refusal();

  const RemoteObject& obj_;
  CURL* h_ = nullptr;
  curl_slist* headers_ = nullptr;
  uint64_t offset_ = 0, len_ = 0;
  std::byte* dst_ = nullptr;
  uint64_t cap_ = 0;
  std::string expect_etag_;
  bool is_head_ = false;
  bool get_etag_missing_ = false;
  long status_ = 0;
  std::string location_;
  std::optional<std::string> content_range_;
  long retry_after_s_ = -1;  // the answer's Retry-After in seconds; -1 without one
  int tries_ = 1;
  std::string refused_;  // why the body was refused mid-transfer
  uint64_t received_ = 0;
  ObjectHead head_;
  char error_[CURL_ERROR_SIZE] = {};
};

// The object's size and ETag.
Status HeadObject(const RemoteObject& obj, const Timeouts& t, ObjectHead* out,
                  TransferStats* stats = nullptr);

// [offset, offset + len) of the object into dst, in one ranged GET.
Status GetRange(const RemoteObject& obj, uint64_t offset, uint64_t len, std::byte* dst,
                const std::string& etag, const Timeouts& t, TransferStats* stats = nullptr);

}  // namespace loadbench
