// Remote models: what an s3:// or http(s):// name means, and how it becomes a request. An S3
// object is addressed at an endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else AWS's own
// for the region), path-style (ENDPOINT/BUCKET/KEY) or virtual-hosted (BUCKET.HOST/KEY), and
// signed with SigV4 when credentials are found (loaders/remote/credentials.h: the environment, a
// profile of the credentials file, else botocore's chain); an http(s):// URL is fetched as it is,
// unsigned.
#pragma once

#include <cstdint>
#include <string>

#include "loaders/base/status.h"

namespace loadbench {

// True for a name that starts with s3://, http:// or https://.
bool IsRemote(const std::string& name);

// One remote object, ready to request. Its credentials are never printed: messages, records and
// env.json name the object by `name` (the URL as given) and nothing else.
struct RemoteObject {
  std::string name;           // as given: s3://BUCKET/KEY or http(s)://HOST[:PORT]/PATH
  std::string url;            // what is requested, the key percent-encoded
  std::string bucket;         // S3 only
  std::string key;            // S3: the key; HTTP: the path, both without the leading '/'
  std::string endpoint;       // S3: the endpoint used; HTTP: SCHEME://HOST[:PORT]
  std::string sigv4;          // CURLOPT_AWS_SIGV4's "aws:amz:REGION:s3", empty when unsigned
  std::string userpwd;        // "KEY_ID:SECRET" for signing; empty when unsigned
  std::string session_token;  // sent as x-amz-security-token when set
  // S3 only: where the credentials came from, or why there are none (AwsCredentials::source),
  // and when they expire (Unix seconds; 0 where not known to). Never a key.
  std::string credentials;
  int64_t credentials_expiry_unix_s = 0;
};

// What an answer refusing the credentials (403) may owe to them, to follow its reason: "; sent
// unsigned: none (botocore looked in: ...)", or "; the credentials were not renewed: botocore:
// container-role, expired at ..."; empty where neither holds.
std::string CredentialsHint(const RemoteObject& obj);

// Resolves `name` from the environment (above). kBadInput naming it for a malformed URL (no
// bucket or key, credentials inside the URL, a query or fragment, an endpoint that is not
// http(s)://HOST[:PORT]) and for a '.' or '..' segment in its path, also percent-encoded (%2e),
// which libcurl or the server would resolve into another object's name; a credentials file
// that cannot be read or parsed, and a source of botocore's chain that fails, are kBadInput too.
Status ResolveRemote(const std::string& name, RemoteObject* out);

// The name of `relative` (a file name an index or a split names) beside `base` (a remote name):
// in the same folder ("prefix"), never outside it. kBadInput naming `base` for an absolute
// name, a URL (another host), a '..' or '.' component (also percent-encoded, as ResolveRemote
// refuses it), a backslash, a query or fragment, or a control character.
Status RemoteSibling(const std::string& base, const std::string& relative, std::string* out);

// The last component of a remote name's path ("model-00001-of-00002.gguf").
std::string RemoteBaseName(const std::string& name);

// RFC 3986 percent-encoding of a key as S3 signs it: unreserved characters and '/' kept,
// every other byte %XX (upper-case hex).
std::string EncodeKey(const std::string& key);

}  // namespace loadbench
