// Building core/v1 Events, see event.h.
#include "kube/event.h"

#include "kube/json_access.h"
#include "kube/time.h"

namespace strait::kube {

using nlohmann::json;

json makeEvent(const EventFields& f) {
  std::string ns = f.eventNamespace;
  if (ns.empty()) ns = stringOf(f.involvedObject, "namespace");
  if (ns.empty()) ns = "default";  // events about cluster-scoped objects live in default
  json meta = {{"namespace", ns}};
  if (!f.name.empty()) {
    meta["name"] = f.name;
  } else {
    meta["generateName"] = stringOf(f.involvedObject, "name") + ".";
  }
  json source = {{"component", f.component}};
  if (!f.host.empty()) source["host"] = f.host;
  const std::string now =
      f.firstTimestamp.empty() || f.lastTimestamp.empty() ? rfc3339Now() : std::string();
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", std::move(meta)},
          {"involvedObject", f.involvedObject},
          {"reason", f.reason},
          {"message", f.message},
          {"type", f.type},
          {"source", std::move(source)},
          {"firstTimestamp", f.firstTimestamp.empty() ? now : f.firstTimestamp},
          {"lastTimestamp", f.lastTimestamp.empty() ? now : f.lastTimestamp},
          {"count", f.count},
          {"reportingComponent", f.component},
          {"reportingInstance", f.host.empty() ? f.component : f.host}};
}

json objectReference(const json& obj) {
  const json& meta = child(obj, "metadata");
  json ref = {{"kind", stringOf(obj, "kind")},
              {"apiVersion", stringOf(obj, "apiVersion")},
              {"name", stringOf(meta, "name")},
              {"uid", stringOf(meta, "uid")},
              {"resourceVersion", stringOf(meta, "resourceVersion")}};
  if (meta.contains("namespace")) ref["namespace"] = meta["namespace"];
  return ref;
}

}  // namespace strait::kube
