#include "minicluster/apply.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;

json elementKey(const json& item, const std::string& mergeKey) {
  json key = json::object();
  if (item.is_object() && item.contains(mergeKey)) key[mergeKey] = item[mergeKey];
  return key;
}

json fieldSet(const json& value, const kube::PatchSchema* schema) {
  json set = json::object();
  if (!value.is_object()) return set;
  for (auto& [k, v] : value.items()) {
    const kube::PatchSchema* child = schema ? schema->field(k) : nullptr;
    std::string f = "f:" + k;
    if (v.is_object() && !(child && child->replaceObject)) {
      set[f] = fieldSet(v, child);
    } else if (v.is_array() && child && child->mergeList && !child->mergeKey.empty()) {
      json elems = json::object();
      for (const auto& item : v) {
        elems["k:" + elementKey(item, child->mergeKey).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)] = fieldSet(item, child);
      }
      set[f] = elems;
    } else {
      set[f] = json::object();  // leaf: a scalar, an atomic list or a replaced object
    }
  }
  return set;
}

}  // namespace

json appliedFieldSet(const json& applied, const kube::PatchSchema* schema) {
  json set = fieldSet(applied, schema);
  set.erase("f:apiVersion");
  set.erase("f:kind");
  if (set.contains("f:metadata")) {
    set["f:metadata"].erase("f:name");
    set["f:metadata"].erase("f:namespace");
    set["f:metadata"].erase("f:resourceVersion");
    set["f:metadata"].erase("f:managedFields");
    if (set["f:metadata"].empty()) set.erase("f:metadata");
  }
  return set;
}

json removedFields(const json& before, const json& after) {
  json out = json::object();
  if (!before.is_object()) return out;
  for (auto& [k, v] : before.items()) {
    if (!after.is_object() || !after.contains(k)) {
      out[k] = json::object();  // the whole field is no longer applied
      continue;
    }
    if (v.is_object() && !v.empty()) {
      json sub = removedFields(v, after[k]);
      if (!sub.empty()) out[k] = sub;
    }
  }
  return out;
}

void removeFieldSet(json& obj, const json& fields) {
  if (!fields.is_object()) return;
  for (auto& [k, sub] : fields.items()) {
    if (k.rfind("f:", 0) == 0 && obj.is_object()) {
      std::string name = k.substr(2);
      if (!obj.contains(name)) continue;
      if (sub.empty()) {
        obj.erase(name);
      } else {
        removeFieldSet(obj[name], sub);
      }
    } else if (k.rfind("k:", 0) == 0 && obj.is_array()) {
      json key = json::parse(k.substr(2), nullptr, false);
      if (!key.is_object()) continue;
      for (size_t i = 0; i < obj.size(); ++i) {
        bool match = obj[i].is_object();
        for (auto& [kk, kv] : key.items()) {
          if (!match || !obj[i].contains(kk) || obj[i][kk] != kv) match = false;
        }
        if (!match) continue;
        if (sub.empty()) {
          obj.erase(i);
        } else {
          removeFieldSet(obj[i], sub);
        }
        break;
      }
    }
  }
}

json managedApplySet(const json& obj, const std::string& manager) {
  if (!obj.contains("metadata") || !obj["metadata"].contains("managedFields") ||
      !obj["metadata"]["managedFields"].is_array()) {
    return json::object();
  }
  for (const auto& e : obj["metadata"]["managedFields"]) {
    if (e.is_object() && e.value("manager", "") == manager &&
        e.value("operation", "") == "Apply" && e.contains("fieldsV1")) {
      return e["fieldsV1"];
    }
  }
  return json::object();
}

void recordApply(json& obj, const std::string& manager, const std::string& apiVersion,
                 const json& fields, const std::string& time) {
  json& mf = obj["metadata"]["managedFields"];
  json kept = json::array();
  if (mf.is_array()) {
    for (const auto& e : mf) {
      if (!(e.is_object() && e.value("manager", "") == manager &&
            e.value("operation", "") == "Apply")) {
        kept.push_back(e);
      }
    }
  }
  kept.push_back({{"manager", manager},
                  {"operation", "Apply"},
                  {"apiVersion", apiVersion},
                  {"time", time},
                  {"fieldsType", "FieldsV1"},
                  {"fieldsV1", fields}});
  mf = kept;
}

}  // namespace strait::minicluster
