// What a remote name means (loaders/remote/url.h): s3:// names resolved path-style and
// virtual-hosted against the endpoint of the environment, http(s):// names taken as given,
// malformed names refused naming them; an index's shard names kept inside its prefix; keys
// percent-encoded as S3 signs them; credentials from the environment or a profile of a
// credentials file, and a malformed file named in one line. Every test sets the variables it
// reads and restores them.
#include "loaders/remote/url.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "loaders/remote/credentials.h"
#include "tests/support/saved_env.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

// Every variable ResolveRemote reads, unset (or set) for one test and restored afterwards.
class RemoteEnv : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {
      "AWS_ENDPOINT_URL_S3",
      "AWS_ENDPOINT_URL",
      "AWS_REGION",
      "AWS_DEFAULT_REGION",
      "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN",
      "AWS_PROFILE",
      "AWS_SHARED_CREDENTIALS_FILE",
      "HOME",
      "LOADBENCH_S3_ADDRESSING",
      // botocore's chain (credentials.h), run where no keys are found, and what it exports.
      "AWS_CONFIG_FILE",
      "AWS_CONTAINER_CREDENTIALS_FULL_URI",
      "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
      "AWS_WEB_IDENTITY_TOKEN_FILE",
      "AWS_EC2_METADATA_DISABLED",
      kCredentialsSourceVar,
      kCredentialsKeyVar,
      kCredentialsExpiryVar,
  };

  void SetUp() override {
    for (const char* n : kNames) ::unsetenv(n);
    // No ~/.aws/credentials or config of the machine's: HOME is an empty folder; and no
    // instance metadata service asked.
    Set("HOME", home_.path());
    Set("AWS_EC2_METADATA_DISABLED", "true");
  }
  static void Set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

  test::TempDir home_;

 private:
  test::SavedEnv saved_{{std::begin(kNames), std::end(kNames)}};
};

using ResolveRemoteTest = RemoteEnv;

TEST_F(ResolveRemoteTest, S3PathStyleAtTheEndpoint) {
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://models/dir/m.wlf", &o).ok());
  EXPECT_EQ(o.name, "s3://models/dir/m.wlf");
  EXPECT_EQ(o.bucket, "models");
  EXPECT_EQ(o.key, "dir/m.wlf");
  EXPECT_EQ(o.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(o.url, "http://127.0.0.1:9000/models/dir/m.wlf");
  EXPECT_EQ(o.sigv4, "");  // no credentials: unsigned
  EXPECT_EQ(o.userpwd, "");
}

TEST_F(ResolveRemoteTest, TheS3EndpointWinsAndATrailingSlashIsDropped) {
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:1");
  Set("AWS_ENDPOINT_URL_S3", "http://localhost:9000//");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.endpoint, "http://localhost:9000");
  EXPECT_EQ(o.url, "http://localhost:9000/b/k");
}

TEST_F(ResolveRemoteTest, VirtualHostedWhenAskedOrAtAws) {
  Set("AWS_ENDPOINT_URL", "http://localhost:9000");
  Set("LOADBENCH_S3_ADDRESSING", "virtual");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://models/m.wlf", &o).ok());
  EXPECT_EQ(o.url, "http://models.localhost:9000/m.wlf");

  ::unsetenv("LOADBENCH_S3_ADDRESSING");
  ::unsetenv("AWS_ENDPOINT_URL");
  Set("AWS_REGION", "eu-west-1");
  ASSERT_TRUE(ResolveRemote("s3://models/m.wlf", &o).ok());
  EXPECT_EQ(o.endpoint, "https://s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(o.url, "https://models.s3.eu-west-1.amazonaws.com/m.wlf");

  Set("LOADBENCH_S3_ADDRESSING", "path");
  ASSERT_TRUE(ResolveRemote("s3://models/m.wlf", &o).ok());
  EXPECT_EQ(o.url, "https://s3.eu-west-1.amazonaws.com/models/m.wlf");
}

TEST_F(ResolveRemoteTest, TheKeyIsPercentEncodedInTheUrlOnly) {
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://b/dir/my model \xC3\xA9.wlf", &o).ok());
  EXPECT_EQ(o.key, "dir/my model \xC3\xA9.wlf");
  EXPECT_EQ(o.url, "http://127.0.0.1:9000/b/dir/my%20model%20%C3%A9.wlf");
}

TEST_F(ResolveRemoteTest, CredentialsFromTheEnvironmentSignWithTheRegion) {
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  Set("AWS_ACCESS_KEY_ID", "AKID");
  Set("AWS_SECRET_ACCESS_KEY", "SECRET");
  Set("AWS_SESSION_TOKEN", "TOKEN");
  Set("AWS_DEFAULT_REGION", "ap-south-1");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.sigv4, "aws:amz:ap-south-1:s3");
  EXPECT_EQ(o.userpwd, "AKID:SECRET");
  EXPECT_EQ(o.session_token, "TOKEN");
  Set("AWS_REGION", "eu-central-1");  // AWS_REGION before AWS_DEFAULT_REGION
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.sigv4, "aws:amz:eu-central-1:s3");
}

TEST_F(ResolveRemoteTest, HttpNamesAreTakenAsGivenAndUnsigned) {
  Set("AWS_ACCESS_KEY_ID", "AKID");
  Set("AWS_SECRET_ACCESS_KEY", "SECRET");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("http://127.0.0.1:8080/models/m.wlf", &o).ok());
  EXPECT_EQ(o.url, "http://127.0.0.1:8080/models/m.wlf");
  EXPECT_EQ(o.endpoint, "http://127.0.0.1:8080");
  EXPECT_EQ(o.key, "models/m.wlf");
  EXPECT_EQ(o.sigv4, "");
  EXPECT_EQ(o.userpwd, "");
}

// kBadInput, one line, naming the name as given (less a credential) and holding `why`.
void ExpectRefused(const std::string& name, const std::string& why) {
  RemoteObject o;
  const Status s = ResolveRemote(name, &o);
  ASSERT_FALSE(s.ok()) << name;
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  // A credential given in the URL is not echoed.
  for (const char* secret : {"pa55w0rd", "S3CR3T"}) {
    EXPECT_EQ(s.message().find(secret), std::string::npos) << s.message();
  }
}

TEST_F(ResolveRemoteTest, MalformedNamesAreRefusedNamingThem) {
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  ExpectRefused("s3://bucket", "s3://bucket: an S3 name is s3://BUCKET/KEY");
  ExpectRefused("s3://bucket/", "s3://bucket/: an S3 name is s3://BUCKET/KEY");
  ExpectRefused("s3:///key", "s3:///key: an S3 name is s3://BUCKET/KEY");
  ExpectRefused("http://127.0.0.1:8080", "no object path after the host");
  ExpectRefused("http:///m.wlf", "no host");
  ExpectRefused("http://user:pa55w0rd@127.0.0.1/m.wlf",
                "http://...@127.0.0.1/m.wlf: credentials inside a URL are refused");
  ExpectRefused("http://127.0.0.1/m.wlf?x=1", "a query or fragment");
  ExpectRefused("http://127.0.0.1/m.wlf#top", "a query or fragment");
  ExpectRefused("http://127.0.0.1/my model.wlf", "spaces or control characters");
  ExpectRefused("ftp://127.0.0.1/m.wlf", "not an s3://, http:// or https:// name");
}

// libcurl resolves "." and ".." segments before it sends a request (RFC 3986's
// remove_dot_segments), and servers decode %2e first: such a name would fetch another object than
// the one its records name.
TEST_F(ResolveRemoteTest, ADotSegmentIsRefusedNamingTheName) {
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  for (const std::string name :
       {"s3://ok/a/../../other/x.wlf", "s3://b/./k", "s3://b/k/..", "s3://../k",
        "http://127.0.0.1:8080/a/../x.wlf", "http://127.0.0.1:8080/a/./x.wlf",
        "http://127.0.0.1:8080/a/%2e%2E/x.wlf", "http://127.0.0.1:8080/a/.%2e/x.wlf",
        "http://127.0.0.1:8080/%2E/x.wlf", "https://h/a/.."}) {
    ExpectRefused(name, name + ": a '.' or '..' segment in its path");
  }
  RemoteObject o;
  for (const std::string name : {"s3://b/a/..x/.y.wlf", "http://127.0.0.1:8080/a/.../x%2e.wlf",
                                 "http://127.0.0.1:8080/a%2e%2e/x.wlf"}) {
    EXPECT_TRUE(ResolveRemote(name, &o).ok()) << name;
  }
}

TEST_F(ResolveRemoteTest, ABadEndpointIsRefusedNamingTheObject) {
  Set("AWS_ENDPOINT_URL", "127.0.0.1:9000");
  ExpectRefused("s3://b/k", "s3://b/k: the endpoint '127.0.0.1:9000' is not http(s)://HOST[:PORT]");
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/prefix");
  ExpectRefused("s3://b/k", "has a path");
  Set("AWS_ENDPOINT_URL", "http://AKID:S3CR3T@127.0.0.1:9000");
  ExpectRefused("s3://b/k", "http://...@127.0.0.1:9000: credentials inside a URL are refused");
}

TEST(RemoteSibling, AShardBesideItsIndex) {
  std::string out;
  ASSERT_TRUE(RemoteSibling("s3://b/dir/model.safetensors.index.json",
                            "model-00001-of-00002.safetensors", &out)
                  .ok());
  EXPECT_EQ(out, "s3://b/dir/model-00001-of-00002.safetensors");
  ASSERT_TRUE(RemoteSibling("http://h:1/i.json", "sub/x.wlf", &out).ok());
  EXPECT_EQ(out, "http://h:1/sub/x.wlf");
}

TEST(RemoteSibling, ANameOutsideThePrefixIsRefusedNamingTheBase) {
  const std::string base = "s3://b/dir/model.safetensors.index.json";
  for (const std::string rel :
       {"/abs.safetensors", "../x.safetensors", "a/../../x.safetensors", "./x.safetensors",
        "http://other.example/x.safetensors", "s3://other/x.safetensors", "dir\\x.safetensors",
        "x?y", "a//b", "", "%2e%2e/x.safetensors", "a/.%2E/x.safetensors", "%2e/x.safetensors"}) {
    std::string out = "untouched";
    const Status s = RemoteSibling(base, rel, &out);
    ASSERT_FALSE(s.ok()) << rel;
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.message();
    EXPECT_TRUE(s.message().starts_with(base + ": names '")) << s.message();
    EXPECT_NE(s.message().find("outside its own prefix"), std::string::npos) << s.message();
    EXPECT_EQ(out, "untouched");
  }
}

TEST(EncodeKey, AsS3SignsIt) {
  EXPECT_EQ(EncodeKey("dir/my model \xC3\xA9.wlf"), "dir/my%20model%20%C3%A9.wlf");
  EXPECT_EQ(EncodeKey("a-b_c.d~e/F0"), "a-b_c.d~e/F0");  // unreserved and '/' kept
  EXPECT_EQ(EncodeKey("a+b=c&d:e@f"), "a%2Bb%3Dc%26d%3Ae%40f");
  EXPECT_EQ(EncodeKey("%"), "%25");
}

using CredentialsTest = RemoteEnv;

TEST_F(CredentialsTest, TheProfileOfTheCredentialsFile) {
  const std::string file = home_.File("credentials");
  std::ofstream(file) << "# a comment\n[default]\naws_access_key_id = DEFID\n"
                         "aws_secret_access_key = DEFSECRET\n\n[work]\n"
                         "aws_access_key_id=WORKID\naws_secret_access_key=WORKSECRET\n"
                         "aws_session_token = WORKTOKEN\n";
  Set("AWS_SHARED_CREDENTIALS_FILE", file);
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.userpwd, "DEFID:DEFSECRET");
  EXPECT_EQ(o.session_token, "");
  EXPECT_EQ(o.sigv4, "aws:amz:us-east-1:s3");

  Set("AWS_PROFILE", "work");
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.userpwd, "WORKID:WORKSECRET");
  EXPECT_EQ(o.session_token, "WORKTOKEN");

  Set("AWS_PROFILE", "absent");  // a profile that is not there: unsigned
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.userpwd, "");
  EXPECT_EQ(o.sigv4, "");

  Set("AWS_ACCESS_KEY_ID", "ENVID");  // the environment before the file
  Set("AWS_SECRET_ACCESS_KEY", "ENVSECRET");
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.userpwd, "ENVID:ENVSECRET");
}

TEST_F(CredentialsTest, TheDefaultFileUnderHome) {
  ASSERT_EQ(::mkdir(home_.File(".aws").c_str(), 0700), 0);
  std::ofstream(home_.File(".aws/credentials")) << "[default]\naws_access_key_id = H\n"
                                                   "aws_secret_access_key = S\n";
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  ASSERT_TRUE(ResolveRemote("s3://b/k", &o).ok());
  EXPECT_EQ(o.userpwd, "H:S");
}

TEST_F(CredentialsTest, AMalformedFileIsOneLineNamingIt) {
  const std::string file = home_.File("credentials");
  std::ofstream(file) << "[default]\naws_access_key_id = ID\nthis line is not a setting\n"
                         "aws_secret_access_key = SECRETVALUE\n";
  Set("AWS_SHARED_CREDENTIALS_FILE", file);
  Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  RemoteObject o;
  const Status s = ResolveRemote("s3://b/k", &o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kBadInput);
  EXPECT_EQ(s.message(), file + ": line 3: not `[profile]` or `key = value`");
  EXPECT_EQ(s.message().find("SECRETVALUE"), std::string::npos);

  std::ofstream(file) << "aws_access_key_id = ID\n";  // a setting before any [profile]
  const Status t = ResolveRemote("s3://b/k", &o);
  EXPECT_EQ(t.message(), file + ": line 1: not `[profile]` or `key = value`");
}

}  // namespace
}  // namespace loadbench
