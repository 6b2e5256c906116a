#pragma once
// Client configuration: where the API server is and how to authenticate, read from
// kubeconfig files (merged as kubectl merges KUBECONFIG) or from a Pod's in-cluster
// service-account files. Pure parsing and file reading; nothing here reads the environment
// (cmd/ passes $KUBECONFIG, $KUBERNETES_SERVICE_HOST/PORT in).
//
// Errors name the file and the field: "/x/config: users[0].user.client-certificate-data:
// not valid base64".

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/status.h"

namespace strait::kube {

// A client.authentication.k8s.io credential plugin (users[].user.exec).
struct ExecConfig {
  std::string apiVersion;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;     // resolved against the kubeconfig's directory when it has a '/'
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to the plugin's environment
  std::string interactiveMode = "IfAvailable";           // Never, IfAvailable, Always
  bool provideClusterInfo = false;
  std::string source;  // "<file>: users[N].user.exec", for error messages
};

// Everything a Client needs, resolved: PEM data inlined, files read (except tokenFile, which
// is re-read because bound service-account tokens rotate).
struct RestConfig {
  std::string server;  // https://host:port (no trailing '/')
  std::string caPem;   // empty: the system trust store
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName;  // name the server certificate is checked against (and SNI)
  std::string clientCertPem;
  std::string clientKeyPem;
  std::string bearerToken;
  std::string bearerTokenFile;  // read at most once a minute
  std::optional<ExecConfig> exec;
  std::string defaultNamespace = "default";  // context namespace
  std::string source;  // "kubeconfig /x/config context=foo" or "in-cluster", for logs

  // Client behaviour (not from the file).
  double qps = 50;   // client-side rate limit; <= 0 disables it
  int burst = 100;
  std::chrono::milliseconds timeout{30000};  // per request (watch and log streams excepted)
  int maxRetries = 3;                        // idempotent requests, 429/5xx/transport errors
  std::string userAgent = "strait/0.1";
};

// Splits a KUBECONFIG value on ':' dropping empty parts ("a::b" -> {a, b}).
std::vector<std::string> splitKubeconfigPaths(std::string_view value);

struct KubeconfigOptions {
  std::vector<std::string> paths;  // in KUBECONFIG order; missing files are skipped
  std::string context;             // empty: current-context
};

// Loads and merges the files as kubectl does (per map key — cluster, user or context name —
// the first file that defines it wins; current-context from the first file that sets it),
// picks the context and resolves it. Relative paths are relative to the file that holds
// them. Errors: NotFound when no file exists or the context/cluster/user is missing;
// Invalid naming file and field for malformed YAML, base64, PEM or a wrong field type.
Result<RestConfig> loadKubeconfig(const KubeconfigOptions& opts);

// One kubeconfig document given as text; `sourceName` is used in errors and as the base for
// relative paths. Same rules as loadKubeconfig.
Result<RestConfig> parseKubeconfig(std::string_view yaml, const std::string& sourceName,
                                   const std::string& context = {});

// Where a Pod finds its service account (paths injectable for tests).
struct InClusterOptions {
  std::string host;  // $KUBERNETES_SERVICE_HOST
  std::string port;  // $KUBERNETES_SERVICE_PORT
  std::string tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string caFile = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// In-cluster configuration: https://host:port (IPv6 hosts bracketed), CA from caFile, the
// token re-read from tokenFile. NotFound when host or port is empty (not in a Pod), Invalid
// when a file is missing or malformed (naming the file).
Result<RestConfig> inClusterConfig(const InClusterOptions& opts);

// Checks that `pem` holds at least one X.509 certificate (`isKey` = false) or a private key.
// Used for kubeconfig data and exec plugin output; the error names `where`.
Status checkPem(const std::string& pem, bool isKey, const std::string& where);

}  // namespace strait::kube
