// Decoding of Kubernetes protobuf bodies: envelopes are built here with the generated
// messages of proto/k8s the way client-go builds them (Go non-pointer fields always set,
// pointer fields only when non-nil), and the JSON is compared with what kubectl would send as
// JSON. Malformed input must give an error value, never a crash.

#include "minicluster/protobuf_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "proto/k8s/apps.pb.h"
#include "proto/k8s/batch.pb.h"
#include "proto/k8s/core.pb.h"
#include "proto/k8s/meta.pb.h"
#include "proto/k8s/runtime.pb.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;
namespace core = strait::k8s::core;
namespace meta = strait::k8s::meta;

const std::string kMagic("k8s\0", 4);

std::string envelope(const std::string& apiVersion, const std::string& kind,
                     const std::string& raw) {
  k8s::runtime::Unknown u;
  u.mutable_typemeta()->set_apiversion(apiVersion);
  u.mutable_typemeta()->set_kind(kind);
  u.set_raw(raw);
  u.set_contentencoding("");  // client-go writes these non-pointer strings empty
  u.set_contenttype("");
  return kMagic + u.SerializeAsString();
}

std::string envelope(const std::string& apiVersion, const std::string& kind,
                     const google::protobuf::Message& m) {
  return envelope(apiVersion, kind, m.SerializeAsString());
}

// ObjectMeta as go-to-protobuf writes it for a new object: every non-pointer string present.
void newMeta(meta::ObjectMeta* m, const std::string& name, const std::string& ns = "") {
  m->set_name(name);
  m->set_generatename("");
  m->set_namespace_(ns);
  m->set_selflink("");
  m->set_uid("");
  m->set_resourceversion("");
  m->set_generation(0);
  m->mutable_creationtimestamp();  // zero time: empty message
}

json decodeOk(const std::string& body) {
  auto r = decodeKubernetesProtobuf(body);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : json();
}

TEST(ProtobufCodec, ConfigMapWithLabelsAndData) {
  core::ConfigMap cm;
  newMeta(cm.mutable_metadata(), "c", "default");
  (*cm.mutable_metadata()->mutable_labels())["app"] = "web";
  (*cm.mutable_data())["a"] = "b";
  (*cm.mutable_data())["empty"] = "";
  (*cm.mutable_binarydata())["bin"] = std::string("\x00\xff\x10", 3);

  json j = decodeOk(envelope("v1", "ConfigMap", cm));
  EXPECT_EQ(j, json::parse(R"({
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "c", "namespace": "default", "labels": {"app": "web"},
                 "creationTimestamp": null},
    "data": {"a": "b", "empty": ""},
    "binaryData": {"bin": "AP8Q"}
  })"))
      << j.dump();
}

TEST(ProtobufCodec, SecretBytesAreBase64AndPointerFalseIsKept) {
  core::Secret s;
  newMeta(s.mutable_metadata(), "s", "default");
  (*s.mutable_data())["p"] = "q";
  (*s.mutable_data())["k"] = "hello world";
  s.set_type("Opaque");
  s.set_immutable(false);  // *bool set to false: meaningful, must survive

  json j = decodeOk(envelope("v1", "Secret", s));
  EXPECT_EQ(j["data"], json::parse(R"({"p": "cQ==", "k": "aGVsbG8gd29ybGQ="})"));
  EXPECT_EQ(j["type"], "Opaque");
  EXPECT_EQ(j["immutable"], false);
  EXPECT_FALSE(j.contains("stringData"));
}

TEST(ProtobufCodec, NamespaceKeepsEmptySpecAndStatus) {
  core::Namespace ns;
  newMeta(ns.mutable_metadata(), "x");
  ns.mutable_spec();
  ns.mutable_status()->set_phase("");

  json j = decodeOk(envelope("v1", "Namespace", ns));
  EXPECT_EQ(j, json::parse(R"({"apiVersion": "v1", "kind": "Namespace",
    "metadata": {"name": "x", "creationTimestamp": null}, "spec": {}, "status": {}})"))
      << j.dump();
}

TEST(ProtobufCodec, TimestampsAreRfc3339) {
  core::Namespace ns;
  newMeta(ns.mutable_metadata(), "x");
  ns.mutable_metadata()->mutable_creationtimestamp()->set_seconds(1796000523);  // 2026-11-30
  auto* cond = ns.mutable_status()->add_conditions();
  cond->set_type("NamespaceDeletionDiscoveryFailure");
  cond->set_status("False");
  cond->mutable_lasttransitiontime()->set_seconds(0);

  json j = decodeOk(envelope("v1", "Namespace", ns));
  EXPECT_EQ(j["metadata"]["creationTimestamp"], "2026-11-30T01:02:03Z");
  // A zero time is null, as Go's JSON writes it.
  EXPECT_TRUE(j["status"]["conditions"][0]["lastTransitionTime"].is_null());
}

core::Container* addContainer(core::PodSpec* spec, const std::string& name,
                              const std::string& image) {
  auto* c = spec->add_containers();
  c->set_name(name);
  c->set_image(image);
  c->set_workingdir("");
  c->mutable_resources();
  c->set_terminationmessagepath("");
  c->set_imagepullpolicy("");
  c->set_stdin(false);
  c->set_tty(false);
  return c;
}

TEST(ProtobufCodec, DeploymentWithTwoContainersResourcesAndEnv) {
  k8s::apps::Deployment d;
  newMeta(d.mutable_metadata(), "web", "default");
  (*d.mutable_metadata()->mutable_labels())["app"] = "web";
  auto* spec = d.mutable_spec();
  spec->set_replicas(0);  // *int32 pointer: zero replicas were asked for
  (*spec->mutable_selector()->mutable_matchlabels())["app"] = "web";
  spec->set_minreadyseconds(0);
  spec->set_paused(false);
  spec->mutable_strategy()->set_type("RollingUpdate");
  auto* ru = spec->mutable_strategy()->mutable_rollingupdate();
  ru->mutable_maxunavailable()->set_type(0);
  ru->mutable_maxunavailable()->set_intval(0);  // *IntOrString 0: no pod may be unavailable
  ru->mutable_maxsurge()->set_type(1);
  ru->mutable_maxsurge()->set_strval("25%");
  auto* tmpl = spec->mutable_template_();
  newMeta(tmpl->mutable_metadata(), "");
  (*tmpl->mutable_metadata()->mutable_labels())["app"] = "web";
  auto* ps = tmpl->mutable_spec();
  auto* nginx = addContainer(ps, "nginx", "nginx:1.27");
  auto* port = nginx->add_ports();
  port->set_name("");
  port->set_hostport(0);
  port->set_containerport(80);
  port->set_protocol("TCP");
  port->set_hostip("");
  (*nginx->mutable_resources()->mutable_limits())["cpu"].set_string("500m");
  (*nginx->mutable_resources()->mutable_requests())["memory"].set_string("64Mi");
  auto* env = nginx->add_env();
  env->set_name("MODE");
  env->set_value("prod");
  auto* env2 = nginx->add_env();
  env2->set_name("POD_NAME");
  env2->set_value("");
  env2->mutable_valuefrom()->mutable_fieldref()->set_apiversion("v1");
  env2->mutable_valuefrom()->mutable_fieldref()->set_fieldpath("metadata.name");
  auto* env3 = nginx->add_env();
  env3->set_name("PASSWORD");
  env3->set_value("");
  auto* sk = env3->mutable_valuefrom()->mutable_secretkeyref();
  sk->mutable_localobjectreference()->set_name("db");  // embedded in Go: inlined in JSON
  sk->set_key("password");
  auto* probe = nginx->mutable_readinessprobe();
  probe->mutable_handler()->mutable_httpget()->set_path("/healthz");
  probe->mutable_handler()->mutable_httpget()->mutable_port()->set_type(1);
  probe->mutable_handler()->mutable_httpget()->mutable_port()->set_strval("http");
  probe->set_periodseconds(5);
  probe->set_initialdelayseconds(0);
  auto* sidecar = addContainer(ps, "sidecar", "busybox");
  sidecar->add_command("sh");
  sidecar->add_command("-c");
  sidecar->add_args("sleep 3600");
  auto* vm = sidecar->add_volumemounts();
  vm->set_name("cfg");
  vm->set_mountpath("/etc/cfg");
  vm->set_readonly(true);
  auto* vol = ps->add_volumes();
  vol->set_name("cfg");
  vol->mutable_volumesource()->mutable_configmap()->mutable_localobjectreference()->set_name("c");
  ps->set_restartpolicy("Always");
  ps->set_terminationgraceperiodseconds(30);
  ps->set_dnspolicy("");
  ps->set_hostnetwork(false);
  (*ps->mutable_nodeselector())["disk"] = "ssd";
  auto* tol = ps->add_tolerations();
  tol->set_key("dedicated");
  tol->set_operator_("Exists");
  tol->set_effect("NoSchedule");
  ps->mutable_securitycontext();

  json j = decodeOk(envelope("apps/v1", "Deployment", d));
  EXPECT_EQ(j["apiVersion"], "apps/v1");
  EXPECT_EQ(j["kind"], "Deployment");
  EXPECT_EQ(j["spec"]["replicas"], 0);
  EXPECT_FALSE(j["spec"].contains("paused"));
  EXPECT_FALSE(j["spec"].contains("minReadySeconds"));
  EXPECT_EQ(j["spec"]["strategy"]["rollingUpdate"],
            json::parse(R"({"maxUnavailable": 0, "maxSurge": "25%"})"));
  const json& pod = j["spec"]["template"];
  EXPECT_EQ(pod["metadata"],
            json::parse(R"({"labels": {"app": "web"}, "creationTimestamp": null})"));
  const json& c0 = pod["spec"]["containers"][0];
  EXPECT_EQ(c0["name"], "nginx");
  EXPECT_EQ(c0["image"], "nginx:1.27");
  EXPECT_EQ(c0["ports"], json::parse(R"([{"containerPort": 80, "protocol": "TCP"}])"));
  EXPECT_EQ(c0["resources"],
            json::parse(R"({"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}})"));
  EXPECT_EQ(c0["env"], json::parse(R"([
    {"name": "MODE", "value": "prod"},
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                    "fieldPath": "metadata.name"}}},
    {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}
  ])"))
      << c0["env"].dump();
  EXPECT_EQ(c0["readinessProbe"], json::parse(R"({"httpGet": {"path": "/healthz",
                                                              "port": "http"},
                                                  "periodSeconds": 5})"));
  EXPECT_FALSE(c0.contains("stdin"));
  EXPECT_FALSE(c0.contains("workingDir"));
  const json& c1 = pod["spec"]["containers"][1];
  EXPECT_EQ(c1["command"], json::parse(R"(["sh", "-c"])"));
  EXPECT_EQ(c1["args"], json::parse(R"(["sleep 3600"])"));
  EXPECT_EQ(c1["resources"], json::object());
  EXPECT_EQ(c1["volumeMounts"],
            json::parse(R"([{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true}])"));
  EXPECT_EQ(pod["spec"]["volumes"], json::parse(R"([{"name": "cfg",
                                                     "configMap": {"name": "c"}}])"));
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Always");
  EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 30);
  EXPECT_FALSE(pod["spec"].contains("dnsPolicy"));
  EXPECT_FALSE(pod["spec"].contains("hostNetwork"));
  EXPECT_EQ(pod["spec"]["nodeSelector"], json::parse(R"({"disk": "ssd"})"));
  EXPECT_EQ(pod["spec"]["tolerations"], json::parse(R"([{"key": "dedicated", "operator": "Exists",
                             "effect": "NoSchedule"}])"));
  EXPECT_EQ(pod["spec"]["securityContext"], json::object());
}

TEST(ProtobufCodec, ServiceTargetPortIntAndString) {
  core::Service svc;
  newMeta(svc.mutable_metadata(), "svc", "default");
  auto* spec = svc.mutable_spec();
  auto* p1 = spec->add_ports();
  p1->set_name("80-8080");
  p1->set_protocol("TCP");
  p1->set_port(80);
  p1->mutable_targetport()->set_type(0);
  p1->mutable_targetport()->set_intval(8080);
  p1->set_nodeport(0);
  auto* p2 = spec->add_ports();
  p2->set_name("https");
  p2->set_protocol("TCP");
  p2->set_port(443);
  p2->mutable_targetport()->set_type(1);
  p2->mutable_targetport()->set_strval("https");
  p2->set_nodeport(0);
  auto* p3 = spec->add_ports();  // targetPort left zero: omitted, the server defaults it
  p3->set_name("plain");
  p3->set_protocol("TCP");
  p3->set_port(81);
  p3->mutable_targetport()->set_type(0);
  p3->mutable_targetport()->set_intval(0);
  (*spec->mutable_selector())["app"] = "svc";
  spec->set_clusterip("");
  spec->set_type("ClusterIP");
  spec->set_sessionaffinity("");
  svc.mutable_status();

  json j = decodeOk(envelope("v1", "Service", svc));
  EXPECT_EQ(j["spec"], json::parse(R"({
    "ports": [
      {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
      {"name": "https", "protocol": "TCP", "port": 443, "targetPort": "https"},
      {"name": "plain", "protocol": "TCP", "port": 81}
    ],
    "selector": {"app": "svc"},
    "type": "ClusterIP"
  })"))
      << j["spec"].dump();
  EXPECT_EQ(j["status"], json::object());
}

TEST(ProtobufCodec, JobAndCronJob) {
  k8s::batch::Job job;
  newMeta(job.mutable_metadata(), "j", "default");
  auto* spec = job.mutable_spec();
  spec->set_backofflimit(0);  // *int32: no retries
  auto* ps = spec->mutable_template_()->mutable_spec();
  addContainer(ps, "j", "busybox");
  ps->set_restartpolicy("Never");

  json j = decodeOk(envelope("batch/v1", "Job", job));
  EXPECT_EQ(j["kind"], "Job");
  EXPECT_EQ(j["apiVersion"], "batch/v1");
  EXPECT_EQ(j["spec"]["backoffLimit"], 0);
  EXPECT_FALSE(j["spec"].contains("parallelism"));
  EXPECT_EQ(j["spec"]["template"]["spec"]["containers"][0]["image"], "busybox");
  EXPECT_EQ(j["spec"]["template"]["spec"]["restartPolicy"], "Never");

  k8s::batch::CronJob cj;
  newMeta(cj.mutable_metadata(), "cj", "default");
  cj.mutable_spec()->set_schedule("*/5 * * * *");
  cj.mutable_spec()->set_suspend(false);
  addContainer(
      cj.mutable_spec()->mutable_jobtemplate()->mutable_spec()->mutable_template_()->mutable_spec(),
      "cj", "busybox");
  json c = decodeOk(envelope("batch/v1", "CronJob", cj));
  EXPECT_EQ(c["spec"]["schedule"], "*/5 * * * *");
  EXPECT_EQ(c["spec"]["suspend"], false);
  EXPECT_EQ(c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["name"], "cj");
}

TEST(ProtobufCodec, ServiceAccountAndDeleteOptions) {
  core::ServiceAccount sa;
  newMeta(sa.mutable_metadata(), "sa", "default");
  sa.add_imagepullsecrets()->set_name("regcred");
  json j = decodeOk(envelope("v1", "ServiceAccount", sa));
  EXPECT_EQ(j["imagePullSecrets"], json::parse(R"([{"name": "regcred"}])"));

  meta::DeleteOptions opts;
  opts.set_graceperiodseconds(0);
  opts.set_propagationpolicy("Foreground");
  opts.mutable_preconditions()->set_uid("u-1");
  json d = decodeOk(envelope("v1", "DeleteOptions", opts));
  EXPECT_EQ(d, json::parse(R"({"apiVersion": "v1", "kind": "DeleteOptions",
    "gracePeriodSeconds": 0, "propagationPolicy": "Foreground",
    "preconditions": {"uid": "u-1"}})"))
      << d.dump();
}

TEST(ProtobufCodec, UnknownKindIsUnsupportedMediaType) {
  auto r = decodeKubernetesProtobuf(envelope("apps/v1", "StatefulSet", std::string()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::UnsupportedMediaType);
  EXPECT_NE(r.error().message.find("apps/v1 StatefulSet"), std::string::npos) << r.error().message;
  // A known kind in a group version the table does not list is not guessed at.
  auto r2 = decodeKubernetesProtobuf(envelope("apps/v1beta1", "Deployment", std::string()));
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code, kube::Code::UnsupportedMediaType);
}

TEST(ProtobufCodec, MalformedBodiesAreBadRequest) {
  core::ConfigMap cm;
  newMeta(cm.mutable_metadata(), "c", "default");
  (*cm.mutable_data())["a"] = "b";
  const std::string good = envelope("v1", "ConfigMap", cm);
  ASSERT_TRUE(decodeKubernetesProtobuf(good).ok());

  auto expectBadRequest = [](std::string_view body, const std::string& what) {
    auto r = decodeKubernetesProtobuf(body);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().code, kube::Code::BadRequest) << what << ": " << r.error().message;
    EXPECT_FALSE(r.error().message.empty()) << what;
  };
  expectBadRequest("", "empty");
  expectBadRequest("{\"kind\":\"ConfigMap\"}", "JSON");
  expectBadRequest(good.substr(4), "no magic");
  expectBadRequest(kMagic, "magic only");
  {
    auto r = decodeKubernetesProtobuf("nope");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("magic prefix"), std::string::npos);
  }
  // Every truncation of a valid body decodes (a cut on a field boundary is a valid, shorter
  // message) or fails with BadRequest: never crashes. A cut inside the object bytes fails.
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = decodeKubernetesProtobuf(std::string_view(good).substr(0, n));
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, kube::Code::BadRequest) << "prefix " << n;
    }
  }
  expectBadRequest(std::string_view(good).substr(0, good.size() - 8), "cut inside raw");
  // Garbage object bytes inside a valid envelope.
  expectBadRequest(envelope("v1", "ConfigMap", std::string("\xff\xff\xff\xff\x0f\x0a\x99", 7)),
                   "garbage raw");
  // Missing kind / apiVersion.
  expectBadRequest(envelope("v1", "", cm), "no kind");
  expectBadRequest(envelope("", "ConfigMap", cm), "no apiVersion");
  // Invalid UTF-8 in a string field.
  core::ConfigMap bad;
  (*bad.mutable_data())["a"] = "\xc3\x28";
  expectBadRequest(envelope("v1", "ConfigMap", bad), "invalid UTF-8");
  // IntOrString with a type that is neither int nor string.
  core::Service svc;
  svc.mutable_spec()->add_ports()->mutable_targetport()->set_type(7);
  expectBadRequest(envelope("v1", "Service", svc), "IntOrString type");
  // A time Go could not print.
  core::Namespace ns;
  ns.mutable_metadata()->mutable_creationtimestamp()->set_seconds(int64_t{1} << 60);
  expectBadRequest(envelope("v1", "Namespace", ns), "time out of range");
}

TEST(ProtobufCodec, RandomBytesNeverCrash) {
  uint32_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    std::string body = kMagic;
    size_t n = i % 64;
    for (size_t k = 0; k < n; ++k) {
      x = x * 1103515245u + 12345u;
      body += static_cast<char>(x >> 16);
    }
    auto r = decodeKubernetesProtobuf(body);
    if (!r.ok()) {
      EXPECT_NE(r.error().code, kube::Code::Internal) << r.error().message;
    }
  }
}

}  // namespace
}  // namespace strait::minicluster
