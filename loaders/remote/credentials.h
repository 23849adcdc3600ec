// S3 credentials, found as the AWS SDKs find them. In order: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN) in the environment; the profile AWS_PROFILE
// (else "default") of AWS_SHARED_CREDENTIALS_FILE (else ~/.aws/credentials); else botocore's own
// chain (assume-role, web identity, the SSO cache, credential_process, the config file, the
// container endpoint, the instance's metadata service), run in a python3 child that hands the
// keys back over a pipe. With none found, requests go unsigned.
//
// botocore is asked once per process tree: the process that asks exports what it found into its
// own environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, and the source
// in kCredentialsSourceVar), so that its workers, which inherit it, take them as they take keys
// of the environment, and a run of 16 workers makes one call to the metadata service, not 16.
// Nothing renews them: a run that outlasts them is refused by the store from then on.
//
// The keys never leave this module but into a request's signature: messages, records and
// env.json hold the source ("botocore: container-role"), never a key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loaders/base/status.h"

namespace loadbench {

// The source of the AWS_* keys of this environment when a process exported them
// ("botocore: container-role"), or "none ..." when botocore found none (so that workers do not
// ask again); it holds for keys of id kCredentialsKeyVar only (a later change of the keys, as
// an experiment's s3rver makes, is "environment"). kCredentialsExpiryVar: when they expire, in
// Unix seconds, where known.
inline constexpr const char* kCredentialsSourceVar = "LOADBENCH_AWS_CREDENTIALS";
inline constexpr const char* kCredentialsKeyVar = "LOADBENCH_AWS_CREDENTIALS_KEY";
inline constexpr const char* kCredentialsExpiryVar = "LOADBENCH_AWS_CREDENTIALS_EXPIRY";

struct AwsCredentials {
  std::string access_key_id;  // empty: none found, requests go unsigned
  std::string secret_access_key;
  std::string session_token;  // sent (and signed) as x-amz-security-token when set
  // Where they came from, the only part of them a message or record holds: "environment",
  // "profile NAME", "botocore: METHOD" (botocore's own name of the provider: container-role,
  // iam-role, sso, assume-role-with-web-identity, ...), or, with none found, "none (WHERE IT
  // LOOKED)".
  std::string source;
  int64_t expiry_unix_s = 0;  // when they expire; 0 where not known to

  bool found() const { return !access_key_id.empty(); }
};

// The environment's keys, else the profile's; none found is Ok with found() false. kBadInput
// naming the file for a credentials file that cannot be read or parsed.
Status StaticCredentials(AwsCredentials* out);

// How botocore is run: the first of `pythons` (a path, or a name looked up in PATH) that can
// import botocore; the child and everything it started are killed past `timeout_s`.
struct BotocoreOptions {
  std::vector<std::string> pythons = {"/usr/bin/python3", "python3"};
  double timeout_s = 10;
};

// botocore's chain, in a child: found, or none found (Ok, found() false, `source` saying where
// it looked; also where no python3 can import botocore). kBadInput with one line naming the
// source that failed (a container endpoint that does not answer, an expired SSO token, a
// profile's assume-role refused), or saying that botocore did not answer in time.
Status BotocoreCredentials(const BotocoreOptions& options, AwsCredentials* out);

// The resolver's answer (the JSON the child writes) into *out. Its forms:
//   {"found": true, "access_key_id": ID, "secret_access_key": SECRET, "token": TOKEN or null,
//    "method": METHOD, "expiry_unix_s": SECONDS or null}
//   {"found": false, "looked": [PROVIDER, ...]}
//   {"error": ONE LINE, "provider": THE PROVIDER THAT FAILED}
// kBadInput for an error, and for an answer of none of these forms; a message never holds
// what the answer held but an error's own line.
Status ParseBotocoreAnswer(std::string_view answer, AwsCredentials* out);

// The chain: StaticCredentials, else what this environment was handed (kCredentialsSourceVar),
// else BotocoreCredentials, whose finding is exported into this process's environment (above).
// Not to be called while another thread reads the environment the first time, when it may
// set it.
Status FindCredentials(AwsCredentials* out);

// What this process's last FindCredentials found, without the keys (source and expiry only);
// an empty source when it found none yet. For the runner to say and record.
AwsCredentials CredentialsFoundHere();

// One line for people: "botocore: container-role, valid until 2026-01-02T03:04:05Z (5 h 59 min
// from `now_unix_s`)"; the source alone where no expiry is known.
std::string DescribeCredentials(const AwsCredentials& c, int64_t now_unix_s);

}  // namespace loadbench
