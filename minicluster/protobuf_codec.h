#pragma once
// Decoding of Kubernetes protobuf request bodies (Content-Type
// application/vnd.kubernetes.protobuf), which kubectl's typed clients send for built-in kinds
// (`kubectl create namespace/configmap/secret/deployment/service/...`). The body is the
// Kubernetes envelope: the 4-byte magic "k8s\0" followed by a runtime.Unknown message
// (typeMeta {apiVersion, kind}, raw bytes of the object, contentEncoding, contentType).
// The object is converted to the JSON the API server would have received.

#include <nlohmann/json.hpp>
#include <string_view>

#include "kube/status.h"

namespace strait::minicluster {

// Returns the object as JSON (apiVersion and kind set from the envelope). Errors:
// BadRequest for a malformed envelope or message, UnsupportedMediaType for a kind whose
// schema this server does not know (the message names the kind).
kube::Result<nlohmann::json> decodeKubernetesProtobuf(std::string_view body);

}  // namespace strait::minicluster
