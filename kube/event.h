#pragma once
// Building core/v1 Events the way client-go's event recorder writes them, for every component
// that reports on objects (the minicluster's controllers, the virtual node, the reflectors).
// Only the object is built here; writing it (and counting repeats) is the caller's. Pure;
// thread-safe.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace strait::kube {

struct EventFields {
  // The ObjectReference the Event is about (apiVersion, kind, namespace, name, uid and
  // optionally resourceVersion); see objectReference().
  nlohmann::json involvedObject;
  std::string type = "Normal";  // "Normal" or "Warning"
  std::string reason;           // UpperCamelCase, e.g. "Scheduled"
  std::string message;
  // source.component and reportingComponent, e.g. "default-scheduler".
  std::string component;
  // source.host (omitted when empty) and reportingInstance (the component when empty).
  std::string host;
  // metadata.name; when empty, metadata.generateName is "<involved name>.".
  std::string name;
  // metadata.namespace; when empty, the involved object's namespace, or "default" for a
  // cluster-scoped object.
  std::string eventNamespace;
  // RFC 3339 times; an empty one is now.
  std::string firstTimestamp;
  std::string lastTimestamp;
  int64_t count = 1;
};

// The Event (apiVersion v1, kind Event) described by `f`.
nlohmann::json makeEvent(const EventFields& f);

// The ObjectReference of a full object: kind, apiVersion, name, uid, resourceVersion, and
// namespace when it has one. Missing or mistyped fields read as "".
nlohmann::json objectReference(const nlohmann::json& obj);

}  // namespace strait::kube
