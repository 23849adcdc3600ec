// Credentials as the AWS SDKs find them (loaders/remote/credentials.h): the resolver's answers
// parsed, bad ones refused in one line that holds no key; the python3 child tried in order,
// killed with what it started when it does not answer in time; botocore's own chain run for
// real (its config file, no network); what it found exported for workers, asked once, and named
// by its source while the keys are the ones exported. The container endpoint end to end is in
// test_credentials.py.
#include "loaders/remote/credentials.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "loaders/remote/url.h"
#include "tests/support/saved_env.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

constexpr const char* kSecret = "sEcReT/abc+123";
constexpr const char* kToken = "ToKeN//xyz==";

void ExpectOneLineWithoutKeys(const Status& s) {
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find(kSecret), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find(kToken), std::string::npos) << s.message();
}

TEST(CredentialsAnswer, FoundWithTokenAndExpiry) {
  AwsCredentials c;
  ASSERT_TRUE(ParseBotocoreAnswer(R"({"found": true, "access_key_id": "ASIAID",
      "secret_access_key": "sEcReT/abc+123", "token": "ToKeN//xyz==", "method": "container-role",
      "expiry_unix_s": 1767225600.5})",
                                  &c)
                  .ok());
  EXPECT_TRUE(c.found());
  EXPECT_EQ(c.access_key_id, "ASIAID");
  EXPECT_EQ(c.secret_access_key, kSecret);
  EXPECT_EQ(c.session_token, kToken);
  EXPECT_EQ(c.source, "botocore: container-role");
  EXPECT_EQ(c.expiry_unix_s, 1767225600);
}

TEST(CredentialsAnswer, FoundWithoutTokenOrExpiry) {
  AwsCredentials c;
  ASSERT_TRUE(ParseBotocoreAnswer(R"({"found": true, "access_key_id": "AKID",
      "secret_access_key": "S", "token": null, "method": "config-file", "expiry_unix_s": null})",
                                  &c)
                  .ok());
  EXPECT_EQ(c.session_token, "");
  EXPECT_EQ(c.expiry_unix_s, 0);
  EXPECT_EQ(c.source, "botocore: config-file");
}

TEST(CredentialsAnswer, NoneFoundSaysWhereItLooked) {
  AwsCredentials c;
  ASSERT_TRUE(ParseBotocoreAnswer(
                  R"({"found": false, "looked": ["env", "sso", "container-role", "iam-role"]})", &c)
                  .ok());
  EXPECT_FALSE(c.found());
  EXPECT_EQ(c.source, "none (botocore looked in: env, sso, container-role, iam-role)");
  ASSERT_TRUE(ParseBotocoreAnswer(R"({"found": false, "looked": [],
      "why": "The config profile (absent) could not be found"})",
                                  &c)
                  .ok());
  EXPECT_EQ(c.source, "none (botocore: The config profile (absent) could not be found)");
}

TEST(CredentialsAnswer, AFailedSourceIsOneLineNamingIt) {
  AwsCredentials c;
  const Status s = ParseBotocoreAnswer(
      R"({"error": "CredentialRetrievalError: Could not connect\nto the endpoint URL",
          "provider": "container-role"})",
      &c);
  ExpectOneLineWithoutKeys(s);
  EXPECT_EQ(s.message(),
            "no AWS credentials: botocore's container-role failed: CredentialRetrievalError: "
            "Could not connect to the endpoint URL");
  EXPECT_FALSE(c.found());
  const Status t = ParseBotocoreAnswer(R"({"error": "KeyError: 'x'"})", &c);
  EXPECT_EQ(t.message(), "no AWS credentials: botocore failed: KeyError: 'x'");
}

TEST(CredentialsAnswer, BadAnswersAreRefusedWithoutWhatTheyHeld) {
  const char* bad[] = {
      "sEcReT/abc+123",                                             // not JSON
      R"(["sEcReT/abc+123"])",                                      // not an object
      R"({"found": true, "access_key_id": "ID"})",                  // no secret
      R"({"found": true, "secret_access_key": "sEcReT/abc+123"})",  // no key id
      R"({"found": true, "access_key_id": "ID", "secret_access_key": "sEcReT/abc+123",
          "token": 7, "method": "sso"})",                           // a token that is no string
      R"({"found": true, "access_key_id": "ID", "secret_access_key": "sEcReT/abc+123",
          "token": "ToKeN//xyz==", "expiry_unix_s": "soon"})",
      R"({"found": "yes", "access_key_id": "ID", "secret_access_key": "sEcReT/abc+123"})",
      "",
  };
  for (const char* answer : bad) {
    AwsCredentials c;
    const Status s = ParseBotocoreAnswer(answer, &c);
    ExpectOneLineWithoutKeys(s);
    EXPECT_TRUE(s.message().starts_with("no AWS credentials: botocore's answer")) << s.message();
    EXPECT_FALSE(c.found()) << answer;
  }
}

TEST(CredentialsDescribe, TheSourceAndItsExpiry) {
  AwsCredentials c;
  c.source = "botocore: iam-role";
  EXPECT_EQ(DescribeCredentials(c, 0), "botocore: iam-role");
  c.expiry_unix_s = 1767225600;  // 2026-01-01T00:00:00Z
  EXPECT_EQ(DescribeCredentials(c, 1767225600 - 3 * 3600 - 120),
            "botocore: iam-role, valid until 2026-01-01T00:00:00Z (3 h 2 min from now)");
  EXPECT_EQ(DescribeCredentials(c, 1767225600 + 90),
            "botocore: iam-role, expired at 2026-01-01T00:00:00Z (1 min ago)");
}

TEST(CredentialsHint, WhatA403OwesToTheCredentials) {
  RemoteObject o;
  o.bucket = "b";
  o.credentials = "none (botocore looked in: env, iam-role)";
  EXPECT_EQ(CredentialsHint(o), "; sent unsigned: none (botocore looked in: env, iam-role)");
  o.sigv4 = "aws:amz:us-east-1:s3";
  o.credentials = "botocore: iam-role";
  o.credentials_expiry_unix_s = static_cast<int64_t>(std::time(nullptr)) + 3600;
  EXPECT_EQ(CredentialsHint(o), "");  // still valid: refused for another reason
  o.credentials_expiry_unix_s = static_cast<int64_t>(std::time(nullptr)) - 90;
  const std::string hint = CredentialsHint(o);
  EXPECT_TRUE(hint.starts_with("; the credentials were not renewed: botocore: iam-role, "
                               "expired at "))
      << hint;
  EXPECT_TRUE(hint.ends_with("Z (1 min ago)")) << hint;
  RemoteObject http;  // an http(s):// name is never signed: nothing to say
  EXPECT_EQ(CredentialsHint(http), "");
}

// Fake python3s: shell scripts in a folder of their own.
class CredentialsChild : public ::testing::Test {
 protected:
  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  test::TempDir dir_;
};

TEST_F(CredentialsChild, TheFirstThatRunsAndHasBotocoreAnswers) {
  BotocoreOptions o;
  o.pythons = {dir_.File("absent-python3"), Script("no-botocore", "exit 3"),
               Script("python3", R"(echo '{"found": true, "access_key_id": "ID",)"
                                 R"( "secret_access_key": "S", "method": "sso"}')")};
  AwsCredentials c;
  ASSERT_TRUE(BotocoreCredentials(o, &c).ok());
  EXPECT_EQ(c.access_key_id, "ID");
  EXPECT_EQ(c.source, "botocore: sso");
}

TEST_F(CredentialsChild, NonePythonWithBotocoreIsNoneFoundSayingWhy) {
  BotocoreOptions o;
  o.pythons = {dir_.File("absent-python3"), Script("no-botocore", "exit 3")};
  AwsCredentials c;
  ASSERT_TRUE(BotocoreCredentials(o, &c).ok());
  EXPECT_FALSE(c.found());
  EXPECT_EQ(c.source, "none (no python3 with botocore: " + dir_.File("absent-python3") +
                          ": No such file or directory; " + dir_.File("no-botocore") +
                          ": no botocore)");
}

TEST_F(CredentialsChild, AChildThatEndsWithoutAnAnswerIsOneLine) {
  BotocoreOptions o;
  o.pythons = {Script("python3", "echo sEcReT/abc+123 >&2; exit 1")};
  AwsCredentials c;
  const Status s = BotocoreCredentials(o, &c);
  ExpectOneLineWithoutKeys(s);
  EXPECT_EQ(s.message(), "no AWS credentials: botocore (" + o.pythons[0] +
                             ") ended with exit code 1 without an answer");
}

bool Gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && line.compare(paren + 2, 1, "Z") == 0;
}

TEST_F(CredentialsChild, OneThatDoesNotAnswerIsKilledWithWhatItStarted) {
  BotocoreOptions o;
  o.timeout_s = 0.5;
  const std::string pid_file = dir_.File("grandchild.pid");
  o.pythons = {Script("python3", "sleep 60 &\necho $! > " + pid_file + "\nsleep 60")};
  AwsCredentials c;
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = BotocoreCredentials(o, &c);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ExpectOneLineWithoutKeys(s);
  EXPECT_NE(s.message().find("found none within 0.5 s and was killed"), std::string::npos)
      << s.message();
  EXPECT_LT(took, 5.0);
  pid_t grandchild = 0;
  ASSERT_TRUE(std::ifstream(pid_file) >> grandchild);
  for (int i = 0; i < 200 && !Gone(grandchild); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(Gone(grandchild)) << "the child's own child " << grandchild << " outlived it";
}

// Every variable the chain reads or writes, unset for one test and restored afterwards; no
// file of the machine's (HOME an empty folder) and no instance metadata service asked.
class CredentialsChain : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {
      "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN",
      "AWS_PROFILE",
      "AWS_DEFAULT_PROFILE",
      "AWS_SHARED_CREDENTIALS_FILE",
      "AWS_CONFIG_FILE",
      "AWS_CONTAINER_CREDENTIALS_FULL_URI",
      "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
      "AWS_CONTAINER_AUTHORIZATION_TOKEN",
      "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
      "AWS_WEB_IDENTITY_TOKEN_FILE",
      "AWS_ROLE_ARN",
      "AWS_EC2_METADATA_DISABLED",
      "AWS_ENDPOINT_URL",
      "AWS_ENDPOINT_URL_S3",
      "HOME",
      kCredentialsSourceVar,
      kCredentialsKeyVar,
      kCredentialsExpiryVar,
  };

  void SetUp() override {
    for (const char* n : kNames) ::unsetenv(n);
    Set("HOME", home_.path());
    Set("AWS_EC2_METADATA_DISABLED", "true");
    Set("AWS_CONFIG_FILE", home_.File("config"));
    if (!HaveBotocore()) GTEST_SKIP() << "no python3 can import botocore (python3-botocore)";
  }
  static bool HaveBotocore() {
    static const bool have = [] {
      AwsCredentials probe;
      return BotocoreCredentials(BotocoreOptions{}, &probe).ok() &&
             !probe.source.starts_with("none (no python3");
    }();
    return have;
  }
  static void Set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }
  static std::string Get(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "<unset>";
  }
  // A profile of botocore's config file: keys only it reads (the credentials file is ours too).
  void Config(const std::string& id) {
    std::ofstream(home_.File("config"))
        << "[default]\naws_access_key_id = " << id << "\naws_secret_access_key = " << kSecret
        << "\naws_session_token = " << kToken << "\n";
  }

  test::TempDir home_;

 private:
  test::SavedEnv saved_{{std::begin(kNames), std::end(kNames)}};
};

TEST_F(CredentialsChain, BotocoresFindingIsExportedForWorkersAndNotAskedAgain) {
  Config("CFGID");
  AwsCredentials c;
  ASSERT_TRUE(FindCredentials(&c).ok());
  EXPECT_EQ(c.access_key_id, "CFGID");
  EXPECT_EQ(c.secret_access_key, kSecret);
  EXPECT_EQ(c.session_token, kToken);
  EXPECT_EQ(c.source, "botocore: config-file");
  // What a worker inherits: the keys, as the environment's, and their source.
  EXPECT_EQ(Get("AWS_ACCESS_KEY_ID"), "CFGID");
  EXPECT_EQ(Get("AWS_SECRET_ACCESS_KEY"), kSecret);
  EXPECT_EQ(Get("AWS_SESSION_TOKEN"), kToken);
  EXPECT_EQ(Get(kCredentialsSourceVar), "botocore: config-file");
  EXPECT_EQ(Get(kCredentialsKeyVar), "CFGID");
  EXPECT_EQ(CredentialsFoundHere().source, "botocore: config-file");
  EXPECT_EQ(CredentialsFoundHere().secret_access_key, "");

  Config("OTHERID");  // not asked again: the exported keys hold
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.userpwd, std::string("CFGID:") + kSecret);
  EXPECT_EQ(o.session_token, kToken);
  EXPECT_EQ(o.credentials, "botocore: config-file");
  EXPECT_EQ(o.sigv4, "aws:amz:us-east-1:s3");

  Set("AWS_ACCESS_KEY_ID", "S3RVER");  // keys set since (an experiment's s3rver): their own
  ASSERT_TRUE(FindCredentials(&c).ok());
  EXPECT_EQ(c.source, "environment");
}

TEST_F(CredentialsChain, NoneFoundIsUnsignedSaysWhereItLookedAndIsNotAskedAgain) {
  AwsCredentials c;
  ASSERT_TRUE(FindCredentials(&c).ok());
  EXPECT_FALSE(c.found());
  EXPECT_TRUE(c.source.starts_with("none (botocore looked in: env, ")) << c.source;
  EXPECT_NE(c.source.find("container-role, iam-role)"), std::string::npos) << c.source;
  EXPECT_EQ(Get(kCredentialsSourceVar), c.source);
  EXPECT_EQ(Get("AWS_ACCESS_KEY_ID"), "<unset>");

  Config("LATERID");  // a worker takes the runner's finding
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.sigv4, "");
  EXPECT_EQ(o.credentials, c.source);
  EXPECT_EQ(CredentialsHint(o), "; sent unsigned: " + c.source);
}

TEST_F(CredentialsChain, StaticKeysComeFirstAndAreNamedSo) {
  Config("CFGID");
  std::ofstream(home_.File("credentials")) << "[default]\naws_access_key_id = FILEID\n"
                                              "aws_secret_access_key = FILESECRET\n";
  Set("AWS_SHARED_CREDENTIALS_FILE", home_.File("credentials"));
  AwsCredentials c;
  ASSERT_TRUE(FindCredentials(&c).ok());
  EXPECT_EQ(c.access_key_id, "FILEID");
  EXPECT_EQ(c.source, "profile default");
  EXPECT_EQ(Get(kCredentialsSourceVar), "<unset>");  // nothing to hand on: workers read the file
  Set("AWS_ACCESS_KEY_ID", "ENVID");
  Set("AWS_SECRET_ACCESS_KEY", "ENVSECRET");
  ASSERT_TRUE(FindCredentials(&c).ok());
  EXPECT_EQ(c.source, "environment");
}

TEST_F(CredentialsChain, AContainerEndpointThatIsDownIsOneLineNamingIt) {
  Set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds");  // discard: closed
  Set("AWS_CONTAINER_AUTHORIZATION_TOKEN", kToken);
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  const Status s = ResolveRemote("s3://b/k", &o);
  ExpectOneLineWithoutKeys(s);
  EXPECT_TRUE(s.message().starts_with("no AWS credentials: botocore's container-role failed: "))
      << s.message();
  EXPECT_EQ(Get(kCredentialsSourceVar), "<unset>");  // nothing exported
}

}  // namespace
}  // namespace loadbench
