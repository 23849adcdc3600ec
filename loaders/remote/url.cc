#include "loaders/remote/url.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "loaders/base/text.h"
#include "loaders/remote/credentials.h"

namespace loadbench {
namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool HasControl(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

Status Bad(const std::string& name, const std::string& why) {
  return Status::BadInput(fmt::format("{}: {}", Printable(name), why));
}

// The '/'-separated segments of `path` ("a//b": "a", "", "b").
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  for (size_t at = 0; at <= path.size();) {
    const size_t end = std::min(path.find('/', at), path.size());
    out.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// "." or "..", also with a dot percent-encoded (%2e, %2E): a segment libcurl resolves away
// before it sends the request (RFC 3986's remove_dot_segments) and servers after decoding, so
// that the request names another object than the name does.
bool IsDotSegment(std::string_view part) {
  std::string plain;
  for (size_t i = 0; i < part.size(); ++i) {
    const bool encoded = part.substr(i, 3) == "%2e" || part.substr(i, 3) == "%2E";
    plain += encoded ? '.' : part[i];
    if (encoded) i += 2;
  }
  return plain == "." || plain == "..";
}

bool HasDotSegment(std::string_view path) {
  const std::vector<std::string_view> parts = Segments(path);
  return std::any_of(parts.begin(), parts.end(), IsDotSegment);
}

// "http://host:port" and the rest ("/path"): kBadInput for what is not http(s)://HOST[:PORT].
Status SplitHttp(const std::string& name, std::string* origin, std::string* path) {
  const size_t scheme_end = name.find("://");
  const size_t host_begin = scheme_end + 3;
  const size_t slash = name.find('/', host_begin);
  *origin = name.substr(0, slash);
  *path = slash == std::string::npos ? "" : name.substr(slash + 1);
  const std::string host = origin->substr(host_begin);
  if (host.empty()) return Bad(name, "no host");
  if (const size_t at = host.find('@'); at != std::string::npos) {
    // Named without what stands before the '@': the message must not carry the secret.
    return Bad(name.substr(0, host_begin) + "..." + name.substr(host_begin + at),
               "credentials inside a URL are refused; give them as AWS_ACCESS_KEY_ID and "
               "AWS_SECRET_ACCESS_KEY or in ~/.aws/credentials");
  }
  if (name.find_first_of("?#") != std::string::npos) {
    return Bad(name, "a URL with a query or fragment; give the object's plain URL");
  }
  if (HasControl(name) || name.find(' ') != std::string::npos) {
    return Bad(name, "a URL holding spaces or control characters");
  }
  return Status::Ok();
}

std::string Region() {
  const char* region = Env("AWS_REGION") ? Env("AWS_REGION") : Env("AWS_DEFAULT_REGION");
  return region ? region : "us-east-1";
}

bool VirtualHosted(const std::string& endpoint_host) {
  if (const char* a = Env("LOADBENCH_S3_ADDRESSING")) return std::string_view(a) == "virtual";
  return endpoint_host.ends_with(".amazonaws.com");
}

Status ResolveS3(const std::string& name, RemoteObject* o) {
  const std::string rest = name.substr(5);
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) {
    return Bad(name, "an S3 name is s3://BUCKET/KEY");
  }
  o->bucket = rest.substr(0, slash);
  o->key = rest.substr(slash + 1);
  if (HasControl(name)) return Bad(name, "a name holding control characters");
  const std::string r = Region();
  const char* ep =
      Env("AWS_ENDPOINT_URL_S3") ? Env("AWS_ENDPOINT_URL_S3") : Env("AWS_ENDPOINT_URL");
  o->endpoint = ep ? ep : fmt::format("https://s3.{}.amazonaws.com", r);
  while (o->endpoint.ends_with('/')) o->endpoint.pop_back();
  std::string origin, path;
  if (!o->endpoint.starts_with("http://") && !o->endpoint.starts_with("https://")) {
    return Bad(name, fmt::format("the endpoint '{}' is not http(s)://HOST[:PORT]",
                                 Printable(o->endpoint)));
  }
  LB_RETURN_IF_ERROR(SplitHttp(o->endpoint, &origin, &path));
  if (!path.empty()) return Bad(name, fmt::format("the endpoint '{}' has a path", o->endpoint));
  const size_t host_at = origin.find("://") + 3;
  if (VirtualHosted(origin.substr(host_at))) {
    o->url = fmt::format("{}{}.{}/{}", origin.substr(0, host_at), o->bucket, origin.substr(host_at),
                         EncodeKey(o->key));
  } else {
    o->url = fmt::format("{}/{}/{}", origin, o->bucket, EncodeKey(o->key));
  }
  return Status::Ok();
}

// The S3 object's credentials (credentials.h), and the signing for the region when found.
Status Sign(RemoteObject* o) {
  AwsCredentials c;
  LB_RETURN_IF_ERROR(FindCredentials(&c));
  o->credentials = c.source;
  o->credentials_expiry_unix_s = c.expiry_unix_s;
  if (c.found()) {
    o->userpwd = fmt::format("{}:{}", c.access_key_id, c.secret_access_key);
    o->session_token = c.session_token;
    o->sigv4 = fmt::format("aws:amz:{}:s3", Region());
  }
  return Status::Ok();
}

}  // namespace

bool IsRemote(const std::string& name) {
  return name.starts_with("s3://") || name.starts_with("http://") || name.starts_with("https://");
}

std::string EncodeKey(const std::string& key) {
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

Status ResolveRemote(const std::string& name, RemoteObject* out) {
  RemoteObject o;
  o.name = name;
  if (name.starts_with("s3://")) {
    LB_RETURN_IF_ERROR(ResolveS3(name, &o));
  } else if (IsRemote(name)) {
    LB_RETURN_IF_ERROR(SplitHttp(name, &o.endpoint, &o.key));
    if (o.key.empty()) return Bad(name, "no object path after the host");
    o.url = name;
  } else {
    return Bad(name, "not an s3://, http:// or https:// name");
  }
  if (HasDotSegment(o.bucket.empty() ? o.key : o.bucket + "/" + o.key)) {
    return Bad(name, "a '.' or '..' segment in its path (it would be resolved away, and another "
                     "object fetched)");
  }
  if (!o.bucket.empty()) LB_RETURN_IF_ERROR(Sign(&o));  // a name refused above asks for none
  *out = std::move(o);
  return Status::Ok();
}

Status RemoteSibling(const std::string& base, const std::string& relative, std::string* out) {
  const auto outside = [&](std::string_view why) {
    return Bad(base,
               fmt::format("names '{}', outside its own prefix ({})", Printable(relative), why));
  };
  if (relative.empty()) return outside("an empty name");
  if (relative.find("://") != std::string::npos) return outside("a URL: another host");
  if (relative.front() == '/') return outside("an absolute path");
  if (relative.find_first_of("\\?#") != std::string::npos || HasControl(relative)) {
    return outside("a backslash, query, fragment or control character");
  }
  for (const std::string_view part : Segments(relative)) {
    if (IsDotSegment(part) || part.empty()) return outside("a '..', '.' or empty component");
  }
  *out = base.substr(0, base.rfind('/') + 1) + relative;
  return Status::Ok();
}

std::string CredentialsHint(const RemoteObject& obj) {
  if (obj.bucket.empty()) return "";  // an http(s):// name: never signed
  if (obj.sigv4.empty()) {
    return obj.credentials.empty() ? "; sent unsigned" : "; sent unsigned: " + obj.credentials;
  }
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (obj.credentials_expiry_unix_s == 0 || obj.credentials_expiry_unix_s > now) return "";
  AwsCredentials c;
  c.source = obj.credentials;
  c.expiry_unix_s = obj.credentials_expiry_unix_s;
  return fmt::format("; the credentials were not renewed: {}", DescribeCredentials(c, now));
}

std::string RemoteBaseName(const std::string& name) { return name.substr(name.rfind('/') + 1); }

}  // namespace loadbench
