#include "loaders/remote/put.h"

#include <curl/curl.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "loaders/base/text.h"
#include "loaders/remote/http.h"

namespace loadbench {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

Status PutObject(const RemoteObject& obj, const std::string& local, const std::string& checksum) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(local.c_str(), "rb"));
  struct stat st;
  if (!f || ::fstat(fileno(f.get()), &st) != 0) return Status::FromErrno(local, errno);
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> h(curl_easy_init(), &curl_easy_cleanup);
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, fmt::format("{}: {}", kChecksumMeta, checksum).c_str());
  headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!obj.session_token.empty()) {
    headers = curl_slist_append(headers,
                                fmt::format("x-amz-security-token: {}", obj.session_token).c_str());
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> keep(headers, &curl_slist_free_all);
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h.get(), CURLOPT_URL, obj.url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.get(), CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(h.get(), CURLOPT_READDATA, f.get());
  curl_easy_setopt(h.get(), CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(st.st_size));
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(h.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h.get(), CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  if (!obj.sigv4.empty()) {
    curl_easy_setopt(h.get(), CURLOPT_AWS_SIGV4, obj.sigv4.c_str());
    curl_easy_setopt(h.get(), CURLOPT_USERPWD, obj.userpwd.c_str());
  }
  const CURLcode code = curl_easy_perform(h.get());
  long status = 0;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  if (code != CURLE_OK) {
    return Status::IOError(fmt::format("{}: the PUT of {} failed: {}", Printable(obj.name), local,
                                       error[0] ? error : curl_easy_strerror(code)));
  }
  if (status != 200) {
    return Status::IOError(fmt::format("{}: the PUT of {} was answered HTTP {}{}",
                                       Printable(obj.name), local, status,
                                       status == 403 ? CredentialsHint(obj) : ""));
  }
  return Status::Ok();
}

Status PutIfChanged(const std::string& local, const std::string& name, const std::string& checksum,
                    bool* put) {
  RemoteObject obj;
  LB_RETURN_IF_ERROR(ResolveRemote(name, &obj));
  struct stat st;
  if (::stat(local.c_str(), &st) != 0) return Status::FromErrno(local, errno);
  ObjectHead head;
  const Status there = HeadObject(obj, Timeouts{}, &head);
  *put =
      !(there.ok() && head.size == static_cast<uint64_t>(st.st_size) && head.checksum == checksum);
  return *put ? PutObject(obj, local, checksum) : Status::Ok();
}

}  // namespace loadbench
