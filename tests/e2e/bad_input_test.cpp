// Malformed and hostile requests sent with curl (admin client certificate from the
// kubeconfig) to a minicluster process: each gets a Status error with the right code and a
// message saying what is wrong, and the server keeps serving afterwards.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

struct HttpResponse {
  int code = 0;        // 0 if curl got no HTTP response
  std::string body;
  std::string curlError;
  std::string describe() const {
    return "HTTP " + std::to_string(code) + "\n--- body ---\n" + body.substr(0, 2000) +
           (curlError.empty() ? "" : "\n--- curl ---\n" + curlError);
  }
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class BadInputTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) {
      return;
    }
    std::string error;
    auto creds = loadAdminCredentials(cluster().kubeconfig(), testDir(), &error);
    ASSERT_TRUE(creds.has_value()) << error;
    creds_ = *creds;
  }

  // Sends METHOD path with `body` (if not empty) as `contentType`. `withCert` = false
  // sends no client certificate.
  HttpResponse request(const std::string& method, const std::string& path,
                       const std::string& body = {},
                       const std::string& contentType = "application/json",
                       bool withCert = true) {
    std::string bodyFile = testDir() + "/request-" + std::to_string(requests_) + ".body";
    std::string outFile = testDir() + "/response-" + std::to_string(requests_) + ".body";
    ++requests_;
    std::vector<std::string> argv{"curl", "-sS", "--max-time", "30", "--cacert", creds_.caFile,
                                  "-X", method, "-H", "Accept: application/json",
                                  "-o", outFile, "-w", "%{http_code}"};
    if (withCert) {
      argv.insert(argv.end(), {"--cert", creds_.certFile, "--key", creds_.keyFile});
    }
    if (!body.empty()) {
      writeFile(bodyFile, body);
      argv.insert(argv.end(), {"-H", "Content-Type: " + contentType, "--data-binary",
                               "@" + bodyFile});
    }
    argv.push_back(creds_.server + path);
    CommandResult r = runCommand(argv, {}, 45s);
    HttpResponse resp;
    resp.body = readFile(outFile);
    try {
      resp.code = std::stoi(r.out);
    } catch (const std::exception&) {
      resp.code = 0;
    }
    if (r.exitCode != 0) {
      resp.curlError = r.describe();
    }
    return resp;
  }

  // The body is a v1 Status with status Failure, `code` and `reason`, and a message;
  // returns it.
  json expectStatus(const HttpResponse& resp, int code, const std::string& reason) {
    EXPECT_EQ(resp.code, code) << resp.describe();
    json status = json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(status.is_object()) << "body is not JSON\n" << resp.describe();
    if (!status.is_object()) {
      return json::object();
    }
    EXPECT_EQ(status.value("kind", ""), "Status") << resp.describe();
    EXPECT_EQ(status.value("apiVersion", ""), "v1") << resp.describe();
    EXPECT_EQ(status.value("status", ""), "Failure") << resp.describe();
    EXPECT_EQ(status.value("code", 0), code) << resp.describe();
    EXPECT_EQ(status.value("reason", ""), reason) << resp.describe();
    EXPECT_FALSE(status.value("message", "").empty()) << resp.describe();
    return status;
  }

  void expectAlive() {
    HttpResponse resp = request("GET", "/healthz");
    EXPECT_EQ(resp.code, 200) << "server not healthy after bad input\n" << resp.describe();
    EXPECT_EQ(resp.body, "ok") << resp.describe();
    EXPECT_TRUE(cluster().running()) << "minicluster exited";
  }

  static std::string configMap(const std::string& name) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
           R"("},"data":{"k":"v"}})";
  }

  AdminCredentials creds_;
  int requests_ = 0;
};

const char* kConfigMaps = "/api/v1/namespaces/default/configmaps";

TEST_F(BadInputTest, MalformedJsonIsBadRequest) {
  HttpResponse resp =
      request("POST", kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name")");
  json status = expectStatus(resp, 400, "BadRequest");
  std::string message = lower(status.value("message", ""));
  EXPECT_TRUE(message.find("json") != std::string::npos ||
              message.find("parse") != std::string::npos ||
              message.find("unexpected") != std::string::npos)
      << "the message should say the JSON is malformed\n"
      << resp.describe();

  // Not an object at all.
  expectStatus(request("POST", kConfigMaps, "[1,2,3]"), 400, "BadRequest");
  expectAlive();
}

TEST_F(BadInputTest, DeeplyNestedJsonIsRejectedWithoutCrashing) {
  std::string deep = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":)";
  constexpr int kDepth = 200000;
  deep += std::string(kDepth, '[') + std::string(kDepth, ']') + "}";
  HttpResponse resp = request("POST", kConfigMaps, deep);
  expectAlive();
  EXPECT_GE(resp.code, 400) << resp.describe();
  EXPECT_LT(resp.code, 500) << resp.describe();
  json status = json::parse(resp.body, nullptr, false);
  ASSERT_TRUE(status.is_object()) << resp.describe();
  EXPECT_EQ(status.value("kind", ""), "Status") << resp.describe();
  EXPECT_EQ(status.value("code", 0), resp.code) << resp.describe();
}

TEST_F(BadInputTest, YamlBodyIsAcceptedAndMalformedYamlIsBadRequest) {
  HttpResponse created = request("POST", kConfigMaps,
                                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n"
                                 "data:\n  greeting: hello\n",
                                 "application/yaml");
  EXPECT_EQ(created.code, 201) << created.describe();
  HttpResponse got = request("GET", std::string(kConfigMaps) + "/from-yaml");
  EXPECT_EQ(got.code, 200) << got.describe();
  json cm = json::parse(got.body, nullptr, false);
  EXPECT_EQ(cm["data"]["greeting"], "hello") << got.describe();

  HttpResponse resp = request("POST", kConfigMaps,
                              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n"
                              "data: {a: b\n",
                              "application/yaml");
  expectStatus(resp, 400, "BadRequest");
  expectAlive();
}

TEST_F(BadInputTest, KindThatDoesNotMatchTheUrlIsBadRequest) {
  HttpResponse resp =
      request("POST", "/api/v1/namespaces/default/secrets", configMap("not-a-secret"));
  expectStatus(resp, 400, "BadRequest");
  // And nothing was created under either resource.
  EXPECT_EQ(request("GET", "/api/v1/namespaces/default/secrets/not-a-secret").code, 404);
  EXPECT_EQ(request("GET", std::string(kConfigMaps) + "/not-a-secret").code, 404);
  expectAlive();
}

TEST_F(BadInputTest, InvalidNameIsUnprocessable) {
  HttpResponse resp = request("POST", kConfigMaps, configMap("Bad_Name"));
  json status = expectStatus(resp, 422, "Invalid");
  EXPECT_THAT(status.value("message", ""), HasSubstr("Bad_Name")) << resp.describe();
  EXPECT_THAT(status.value("message", ""), HasSubstr("metadata.name")) << resp.describe();
  EXPECT_EQ(status["details"].value("name", ""), "Bad_Name") << resp.describe();
  EXPECT_EQ(status["details"].value("kind", ""), "ConfigMap") << resp.describe();
  const json& causes = status["details"]["causes"];
  ASSERT_TRUE(causes.is_array() && !causes.empty()) << resp.describe();
  EXPECT_EQ(causes[0].value("field", ""), "metadata.name") << resp.describe();
  EXPECT_EQ(causes[0].value("reason", ""), "FieldValueInvalid") << resp.describe();
  expectAlive();
}

TEST_F(BadInputTest, BodyOverThreeMebibytesIsTooLarge) {
  std::string big = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge"},"data":{"k":")";
  big += std::string(3 * 1024 * 1024 + 4096, 'x');
  big += "\"}}";
  HttpResponse resp = request("POST", kConfigMaps, big);
  expectStatus(resp, 413, "RequestEntityTooLarge");
  EXPECT_EQ(request("GET", std::string(kConfigMaps) + "/huge").code, 404);
  expectAlive();
}

TEST_F(BadInputTest, BrokenLabelSelectorIsBadRequest) {
  HttpResponse resp = request("GET", std::string(kConfigMaps) + "?labelSelector=a%20in%20(");
  expectStatus(resp, 400, "BadRequest");
  resp = request("GET", "/api/v1/pods?fieldSelector=metadata.name%3D%3D%3Dx%3D");
  EXPECT_EQ(resp.code, 400) << resp.describe();
  resp = request("GET", "/api/v1/pods?fieldSelector=spec.unknownField%3Dx");
  expectStatus(resp, 400, "BadRequest");
  expectAlive();
}

TEST_F(BadInputTest, UnknownResourceIsNotFound) {
  expectStatus(request("GET", "/api/v1/widgets"), 404, "NotFound");
  expectStatus(request("GET", "/apis/nope.example.com/v1/things"), 404, "NotFound");
  expectAlive();
}

TEST_F(BadInputTest, UnsupportedContentTypeIsRejected) {
  HttpResponse resp = request("POST", kConfigMaps, configMap("text-plain"), "text/plain");
  expectStatus(resp, 415, "UnsupportedMediaType");
  expectAlive();
}

TEST_F(BadInputTest, RequestWithoutClientCertificateIsRefused) {
  HttpResponse resp = request("GET", "/api/v1/namespaces/default/secrets", {}, {}, false);
  // Either the TLS handshake refuses a client without a certificate (no HTTP response),
  // or the request is answered 401/403 with a Status. Never the secrets.
  if (resp.code != 0) {
    EXPECT_TRUE(resp.code == 401 || resp.code == 403) << resp.describe();
    json status = json::parse(resp.body, nullptr, false);
    ASSERT_TRUE(status.is_object()) << resp.describe();
    EXPECT_EQ(status.value("kind", ""), "Status") << resp.describe();
    EXPECT_EQ(status.value("code", 0), resp.code) << resp.describe();
  } else {
    EXPECT_FALSE(resp.curlError.empty());
  }
  expectAlive();
}

TEST_F(BadInputTest, MalformedPatchesAreRejected) {
  ASSERT_EQ(request("POST", kConfigMaps, configMap("patch-target")).code, 201);
  const std::string target = std::string(kConfigMaps) + "/patch-target";
  expectStatus(request("PATCH", target, R"({"data":{"k":)", "application/merge-patch+json"), 400,
               "BadRequest");
  expectStatus(request("PATCH", target, R"({"data":{"k":)", "application/strategic-merge-patch+json"),
               400, "BadRequest");
  expectStatus(request("PATCH", target, R"({"op":"add"})", "application/json-patch+json"), 400,
               "BadRequest");
  expectStatus(request("PATCH", target, R"({"data":{"k":"x"}})", "application/xml"), 415,
               "UnsupportedMediaType");
  // The object is unchanged.
  HttpResponse got = request("GET", target);
  json cm = json::parse(got.body, nullptr, false);
  ASSERT_TRUE(cm.is_object()) << got.describe();
  EXPECT_EQ(cm["data"], json({{"k", "v"}})) << got.describe();
  expectAlive();
}

TEST_F(BadInputTest, OverlongAndNonAsciiNamesAreInvalid) {
  expectStatus(request("POST", kConfigMaps, configMap(std::string(300, 'a'))), 422, "Invalid");
  expectStatus(request("POST", kConfigMaps, configMap("caf\\u00e9")), 422, "Invalid");
  expectStatus(request("POST", kConfigMaps, configMap("nul\\u0000byte")), 422, "Invalid");
  expectAlive();
}

TEST_F(BadInputTest, ServerStillAliveAfterAllOfIt) { expectAlive(); }

}  // namespace
}  // namespace strait::e2e
