// What a process-runtime container sees, without running one: volume contents and the
// kubelet's AtomicWriter layout, downward values, resourceFieldRef, the resolv.conf of each
// dnsPolicy, hosts with hostAliases, $(VAR) expansion, the ServiceAccount admission's
// kube-api-access volume and the signed token. (Mounting them into running containers is
// tested end to end in tests/e2e/process_runtime_volumes_test.cpp.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kube/base64.h"
#include "kube/pki.h"
#include "minicluster/runtime_process_podfiles.h"
#include "minicluster/runtime_process_volumes.h"
#include "minicluster/serviceaccount_admission.h"
#include "minicluster/serviceaccount_token_auth.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDirectory {
 public:
  TempDirectory() {
    char tmpl[] = "/tmp/strait-volumes-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDirectory() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

VolumeSources sourcesWith(std::map<std::string, json> objects) {
  VolumeSources s;
  s.get = [objects](const std::string& resource, const std::string& name) -> std::optional<json> {
    auto it = objects.find(resource + "/" + name);
    if (it == objects.end()) return std::nullopt;
    return it->second;
  };
  return s;
}

json pod() {
  return {{"metadata",
           {{"name", "web"},
            {"namespace", "shop"},
            {"uid", "u-1"},
            {"labels", {{"b", "2"}, {"app", "web"}}},
            {"annotations", {{"note", "say \"hi\"\n"}}}}},
          {"spec",
           {{"nodeName", "node-0"},
            {"serviceAccountName", "builder"},
            {"containers",
             json::array({{{"name", "main"},
                           {"resources",
                            {{"limits", {{"cpu", "500m"}, {"memory", "64Mi"}}},
                             {"requests", {{"cpu", "250m"}}}}}}})}}},
          {"status", {{"podIP", "10.244.0.5"}, {"hostIP", "100.64.0.2"}}}};
}

TEST(VolumeFilesTest, ConfigMapKeysItemsModesAndMissingObjects) {
  auto src = sourcesWith({{"configmaps/cfg", {{"data", {{"a", "1"}, {"b", "2"}}}}}});
  auto all = volumeFiles(json{{"configMap", {{"name", "cfg"}}}}, pod(), src);
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].path, "a");
  EXPECT_EQ((*all)[0].mode, 0644);

  json items = {{"configMap",
                 {{"name", "cfg"},
                  {"defaultMode", 0600},
                  {"items", json::array({{{"key", "b"}, {"path", "dir/bee"}, {"mode", 0400}},
                                         {{"key", "a"}, {"path", "ay"}}})}}}};
  auto some = volumeFiles(items, pod(), src);
  ASSERT_TRUE(some);
  ASSERT_EQ(some->size(), 2u);
  EXPECT_EQ((*some)[0].path, "dir/bee");
  EXPECT_EQ((*some)[0].mode, 0400);
  EXPECT_EQ((*some)[1].mode, 0600);

  auto missing = volumeFiles(json{{"configMap", {{"name", "nope"}}}}, pod(), src);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "configmap \"nope\" not found");
  auto optional = volumeFiles(json{{"configMap", {{"name", "nope"}, {"optional", true}}}}, pod(), src);
  ASSERT_TRUE(optional);
  EXPECT_TRUE(optional->empty());

  json badKey = {{"configMap", {{"name", "cfg"}, {"items", json::array({{{"key", "zz"}, {"path", "z"}}})}}}};
  auto noKey = volumeFiles(badKey, pod(), src);
  ASSERT_FALSE(noKey);
  EXPECT_THAT(noKey.error().message, HasSubstr("non-existent config key: zz"));

  json escape = {{"configMap", {{"name", "cfg"}, {"items", json::array({{{"key", "a"}, {"path", "../x"}}})}}}};
  EXPECT_FALSE(volumeFiles(escape, pod(), src));
}

TEST(VolumeFilesTest, SecretsAreDecodedAndMissingOnesNamed) {
  auto src = sourcesWith({{"secrets/s", {{"data", {{"password", kube::base64Encode("hunter2")}}}}}});
  auto files = volumeFiles(json{{"secret", {{"secretName", "s"}}}}, pod(), src);
  ASSERT_TRUE(files);
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].data, "hunter2");
  auto missing = volumeFiles(json{{"secret", {{"secretName", "t"}}}}, pod(), src);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "secret \"t\" not found");
}

TEST(VolumeFilesTest, ProjectedCombinesTokenConfigMapSecretAndDownwardApi) {
  auto src = sourcesWith({{"configmaps/kube-root-ca.crt", {{"data", {{"ca.crt", "PEM"}}}}},
                          {"secrets/s", {{"data", {{"k", kube::base64Encode("v")}}}}}});
  src.token = [](const std::string& audience, int64_t exp) {
    return "token-for-" + (audience.empty() ? std::string("api") : audience) + "-" + std::to_string(exp);
  };
  json v = {{"projected",
             {{"sources",
               json::array({{{"serviceAccountToken", {{"path", "token"}, {"expirationSeconds", 3607}}}},
                            {{"configMap", {{"name", "kube-root-ca.crt"}, {"items", json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}}}},
                            {{"secret", {{"name", "s"}}}},
                            {{"downwardAPI",
                              {{"items", json::array({{{"path", "namespace"},
                                                       {"fieldRef", {{"fieldPath", "metadata.namespace"}}}}})}}}}})}}}};
  auto files = volumeFiles(v, pod(), src);
  ASSERT_TRUE(files) << files.error().message;
  std::map<std::string, std::string> byPath;
  for (const auto& f : *files) byPath[f.path] = f.data;
  EXPECT_EQ(byPath["token"], "token-for-api-3607");
  EXPECT_EQ(byPath["ca.crt"], "PEM");
  EXPECT_EQ(byPath["k"], "v");
  EXPECT_EQ(byPath["namespace"], "shop");
  src.token = nullptr;
  EXPECT_FALSE(volumeFiles(v, pod(), src));
}

TEST(DownwardApiTest, FieldPathsAsTheKubeletFormatsThem) {
  json p = pod();
  EXPECT_EQ(*downwardFieldValue(p, "metadata.name"), "web");
  EXPECT_EQ(*downwardFieldValue(p, "metadata.uid"), "u-1");
  EXPECT_EQ(*downwardFieldValue(p, "metadata.labels"), "app=\"web\"\nb=\"2\"");
  EXPECT_EQ(*downwardFieldValue(p, "metadata.annotations"), "note=\"say \\\"hi\\\"\\n\"");
  EXPECT_EQ(*downwardFieldValue(p, "metadata.labels['app']"), "web");
  EXPECT_EQ(*downwardFieldValue(p, "spec.nodeName"), "node-0");
  EXPECT_EQ(*downwardFieldValue(p, "spec.serviceAccountName"), "builder");
  EXPECT_EQ(*downwardFieldValue(p, "status.podIPs"), "10.244.0.5");
  EXPECT_EQ(*downwardFieldValue(p, "status.hostIP"), "100.64.0.2");
  EXPECT_FALSE(downwardFieldValue(p, "spec.schedulerName"));
}

TEST(DownwardApiTest, ResourceFieldsUseDivisorsAndNodeAllocatableWithoutLimit) {
  const json p = pod();
  const json& c = p["spec"]["containers"][0];
  std::map<std::string, kube::Quantity> alloc = {{"cpu", *kube::Quantity::parse("4")},
                                                 {"memory", *kube::Quantity::parse("8Gi")}};
  EXPECT_EQ(*resourceFieldValue(json{{"resource", "limits.cpu"}}, c, alloc), "1");
  EXPECT_EQ(*resourceFieldValue(json{{"resource", "limits.cpu"}, {"divisor", "1m"}}, c, alloc), "500");
  EXPECT_EQ(*resourceFieldValue(json{{"resource", "requests.cpu"}, {"divisor", "1m"}}, c, alloc), "250");
  EXPECT_EQ(*resourceFieldValue(json{{"resource", "limits.memory"}, {"divisor", "1Mi"}}, c, alloc), "64");
  EXPECT_EQ(*resourceFieldValue(json{{"resource", "limits.memory"}}, c, alloc), "67108864");
  json bare = {{"name", "x"}};
  EXPECT_EQ(*resourceFieldValue(json{{"resource", "limits.cpu"}}, bare, alloc), "4");
  EXPECT_EQ(*resourceFieldValue(json{{"resource", "limits.memory"}, {"divisor", "1Gi"}}, bare, alloc), "8");
  EXPECT_FALSE(resourceFieldValue(json{{"resource", "limits.gpu"}}, c, alloc));
}

TEST(AtomicWriterTest, DataLinkSwapsAndStaleEntriesGo) {
  TempDirectory t;
  std::string dir = t.path() + "/vol";
  auto first = writeVolumeAtomically(dir, {{"a", "1", 0644}, {"sub/b", "2", 0600}});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(*first);
  EXPECT_TRUE(fs::is_symlink(dir + "/..data"));
  EXPECT_TRUE(fs::is_symlink(dir + "/a"));
  EXPECT_EQ(fs::read_symlink(dir + "/a").string(), "..data/a");
  EXPECT_EQ(slurp(dir + "/a"), "1");
  EXPECT_EQ(slurp(dir + "/sub/b"), "2");
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/sub/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string oldTarget = fs::read_symlink(dir + "/..data").string();

  auto same = writeVolumeAtomically(dir, {{"a", "1", 0644}, {"sub/b", "2", 0600}});
  ASSERT_TRUE(same);
  EXPECT_FALSE(*same);

  auto changed = writeVolumeAtomically(dir, {{"a", "one", 0644}});
  ASSERT_TRUE(changed);
  EXPECT_TRUE(*changed);
  EXPECT_EQ(slurp(dir + "/a"), "one");
  EXPECT_FALSE(fs::exists(dir + "/sub"));
  EXPECT_FALSE(fs::exists(dir + "/" + oldTarget));
  EXPECT_FALSE(writeVolumeAtomically(dir, {{"/etc/passwd", "x", 0644}}));
}

TEST(PodVolumesTest, SetUpFailsNamingTheMissingConfigMapThenMountsSubPathsAndReadOnly) {
  TempDirectory t;
  json p = pod();
  p["spec"]["volumes"] = json::array({{{"name", "cfg"}, {"configMap", {{"name", "cfg"}}}},
                                      {{"name", "scratch"}, {"emptyDir", json::object()}}});
  PodVolumes vols(t.path() + "/pod");
  auto none = vols.setUp(p, sourcesWith({}));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "MountVolume.SetUp failed for volume \"cfg\" : configmap \"cfg\" not found");

  auto src = sourcesWith({{"configmaps/cfg", {{"data", {{"app.conf", "x=1"}}}}}});
  ASSERT_TRUE(vols.setUp(p, src));
  json c = {{"name", "main"},
            {"volumeMounts", json::array({{{"name", "cfg"}, {"mountPath", t.path() + "/mnt/cfg"}},
                                          {{"name", "cfg"}, {"mountPath", t.path() + "/mnt/one.conf"}, {"subPath", "app.conf"}},
                                          {{"name", "scratch"}, {"mountPath", t.path() + "/mnt/scratch"}, {"readOnly", true}},
                                          {{"name", "scratch"}, {"mountPath", t.path() + "/mnt/deep/er"}, {"subPath", "logs"}}})}};
  std::vector<std::string> created;
  auto mounts = vols.mountsFor(p, c, created);
  ASSERT_TRUE(mounts) << mounts.error().message;
  ASSERT_EQ(mounts->size(), 4u);
  EXPECT_EQ((*mounts)[0].source, t.path() + "/pod/cfg");
  EXPECT_TRUE((*mounts)[0].readOnly);  // API data volumes are read-only
  // subPath: the file itself (through ..data), mounted on an empty file.
  EXPECT_EQ(slurp((*mounts)[1].source), "x=1");
  EXPECT_THAT((*mounts)[1].source, HasSubstr("/..subpaths/"));  // a copy: updates do not reach it
  EXPECT_TRUE(fs::is_regular_file(t.path() + "/mnt/one.conf"));
  EXPECT_TRUE((*mounts)[2].readOnly);
  EXPECT_TRUE(fs::is_directory(t.path() + "/pod/scratch/logs"));  // an emptyDir subPath is created
  EXPECT_EQ((*mounts)[3].target, t.path() + "/mnt/deep/er");
  EXPECT_THAT(created, ::testing::Contains(t.path() + "/mnt/deep/er"));

  json bad = {{"name", "main"}, {"volumeMounts", json::array({{{"name", "cfg"}, {"mountPath", "/x"}, {"subPath", "../../etc"}}})}};
  EXPECT_FALSE(vols.mountsFor(p, bad, created));

  // A ConfigMap update reaches the mounted directory through a new ..data.
  auto updated = sourcesWith({{"configmaps/cfg", {{"data", {{"app.conf", "x=2"}}}}}});
  EXPECT_THAT(vols.refresh(p, updated), ElementsAre("cfg"));
  EXPECT_EQ(slurp(t.path() + "/pod/cfg/app.conf"), "x=2");
  EXPECT_EQ(slurp((*mounts)[1].source), "x=1");
  vols.tearDown();
  EXPECT_FALSE(fs::exists(t.path() + "/pod"));
}

TEST(PodVolumesTest, ProjectedTokenIsReusedWhileOtherSourcesFollowUpdates) {
  TempDirectory t;
  json p = pod();
  p["spec"]["volumes"] = json::array(
      {{{"name", "api"},
        {"projected",
         {{"sources", json::array({{{"serviceAccountToken", {{"path", "token"}, {"expirationSeconds", 3607}}}},
                                   {{"configMap", {{"name", "cfg"}}}}})}}}}});
  int issued = 0;
  auto withData = [&](const std::string& value) {
    auto src = sourcesWith({{"configmaps/cfg", {{"data", {{"k", value}}}}}});
    src.token = [&](const std::string&, int64_t) { return "token-" + std::to_string(++issued); };
    return src;
  };
  PodVolumes vols(t.path() + "/pod");
  ASSERT_TRUE(vols.setUp(p, withData("1")));
  EXPECT_TRUE(vols.refresh(p, withData("1")).empty());  // the same token: nothing changed
  EXPECT_THAT(vols.refresh(p, withData("2")), ElementsAre("api"));
  EXPECT_EQ(slurp(t.path() + "/pod/api/k"), "2");
  EXPECT_EQ(slurp(t.path() + "/pod/api/token"), "token-1");
  EXPECT_EQ(issued, 1);
  vols.tearDown();
}

TEST(PodFilesTest, ResolvConfOfEachDnsPolicy) {
  std::string host = "nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n";
  json p = pod();
  EXPECT_EQ(*podResolvConfFor(p, host),
            "nameserver 10.96.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local "
            "corp.example\noptions ndots:5\n");
  p["spec"]["dnsPolicy"] = "Default";
  EXPECT_EQ(*podResolvConfFor(p, host), "nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n");
  p["spec"]["dnsPolicy"] = "None";
  p["spec"]["dnsConfig"] = {{"nameservers", {"1.1.1.1"}},
                            {"searches", {"a.example"}},
                            {"options", json::array({{{"name", "ndots"}, {"value", "2"}}, {{"name", "rotate"}}})}};
  EXPECT_EQ(*podResolvConfFor(p, host), "nameserver 1.1.1.1\nsearch a.example\noptions ndots:2 rotate\n");
  p["spec"]["dnsPolicy"] = "ClusterFirst";
  EXPECT_EQ(*podResolvConfFor(p, host),
            "nameserver 10.96.0.10\nnameserver 1.1.1.1\nsearch shop.svc.cluster.local "
            "svc.cluster.local cluster.local corp.example a.example\noptions ndots:2 rotate\n");
  json hostNet = pod();
  hostNet["spec"]["hostNetwork"] = true;
  EXPECT_FALSE(podResolvConfFor(hostNet, host));
  hostNet["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet";
  EXPECT_THAT(*podResolvConfFor(hostNet, host), HasSubstr("nameserver 10.96.0.10\n"));
}

TEST(PodFilesTest, HostsWithSubdomainAndHostAliases) {
  json p = pod();
  p["spec"]["hostname"] = "db-0";
  p["spec"]["subdomain"] = "db";
  p["spec"]["hostAliases"] = json::array({{{"ip", "192.0.2.1"}, {"hostnames", {"foo.local", "bar.local"}}}});
  std::string hosts = podHostsFile(p, "10.244.0.5");
  EXPECT_THAT(hosts, HasSubstr("10.244.0.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n"));
  EXPECT_THAT(hosts, HasSubstr("# Entries added by HostAliases.\n192.0.2.1\tfoo.local\tbar.local\n"));
}

TEST(PodFilesTest, EnvReferencesExpand) {
  std::map<std::string, std::string> vars = {{"A", "1"}};
  EXPECT_EQ(expandEnvReferences("x$(A)y$(B)$$(A)", vars), "x1y$(B)$(A)");
}

TEST(PodFilesTest, TokenIsASignedJwtForThePodsServiceAccount) {
  auto ca = kube::makeCa("test-ca");
  ASSERT_TRUE(ca);
  auto token = signServiceAccountToken(pod(), "node-0", "", 3607, ca->keyPem);
  ASSERT_TRUE(token) << token.error().message;
  auto dot1 = token->find('.'), dot2 = token->rfind('.');
  ASSERT_NE(dot1, dot2);
  std::string payload = token->substr(dot1 + 1, dot2 - dot1 - 1);
  for (auto& ch : payload) ch = ch == '-' ? '+' : ch == '_' ? '/' : ch;
  while (payload.size() % 4) payload += '=';
  json claims = json::parse(kube::base64Decode(payload).value_or("{}"));
  EXPECT_EQ(claims["sub"], "system:serviceaccount:shop:builder");
  EXPECT_EQ(claims["kubernetes.io"]["pod"]["name"], "web");
  EXPECT_EQ(claims["exp"].get<int64_t>() - claims["iat"].get<int64_t>(), 3607);
  EXPECT_FALSE(signServiceAccountToken(pod(), "node-0", "", 3607, "not a key"));

  // The API server's authenticator accepts it with the CA's certificate, and nothing else.
  auto id = verifyServiceAccountToken(*token, ca->certPem);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->ns, "shop");
  EXPECT_EQ(id->serviceAccount, "builder");
  EXPECT_EQ(id->podUid, "u-1");
  auto other = kube::makeCa("other-ca");
  EXPECT_FALSE(verifyServiceAccountToken(*token, other->certPem));
  std::string tampered = *token;
  tampered[dot1 + 5] = tampered[dot1 + 5] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(verifyServiceAccountToken(tampered, ca->certPem));
  EXPECT_FALSE(verifyServiceAccountToken("a.b", ca->certPem));
}

TEST(ServiceAccountAdmissionTest, InjectsKubeApiAccessUnlessOptedOut) {
  json p = {{"spec",
             {{"containers", json::array({{{"name", "a"}}, {{"name", "b"},
                                                           {"volumeMounts", json::array({{{"name", "own"}, {"mountPath", kServiceAccountMountPath}}})}}})},
              {"initContainers", json::array({{{"name", "i"}}})}}}};
  admitServiceAccount(p, nullptr, "x7k2q");
  EXPECT_EQ(p["spec"]["serviceAccountName"], "default");
  ASSERT_EQ(p["spec"]["volumes"].size(), 1u);
  EXPECT_EQ(p["spec"]["volumes"][0]["name"], "kube-api-access-x7k2q");
  EXPECT_EQ(p["spec"]["volumes"][0]["projected"]["sources"].size(), 3u);
  EXPECT_EQ(p["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], kServiceAccountMountPath);
  EXPECT_EQ(p["spec"]["containers"][0]["volumeMounts"][0]["readOnly"], true);
  EXPECT_EQ(p["spec"]["containers"][1]["volumeMounts"].size(), 1u);  // had its own
  EXPECT_EQ(p["spec"]["initContainers"][0]["volumeMounts"][0]["name"], "kube-api-access-x7k2q");

  json off = {{"spec", {{"automountServiceAccountToken", false}, {"containers", json::array({{{"name", "a"}}})}}}};
  admitServiceAccount(off, nullptr, "x");
  EXPECT_FALSE(off["spec"].contains("volumes"));
  json sa = {{"automountServiceAccountToken", false}};
  json bySa = {{"spec", {{"serviceAccountName", "robot"}, {"containers", json::array({{{"name", "a"}}})}}}};
  admitServiceAccount(bySa, &sa, "x");
  EXPECT_FALSE(bySa["spec"].contains("volumes"));
  EXPECT_EQ(bySa["spec"]["serviceAccountName"], "robot");
}

}  // namespace
}  // namespace strait::minicluster
