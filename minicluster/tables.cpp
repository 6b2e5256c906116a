// Table conversion for `kubectl get`. Columns and cell formats follow upstream
// pkg/printers/internalversion (built-in kinds, always generated "wide" as the API server
// does, so priority-1 columns carry cells too), the apiextensions table convertor (CRD
// additionalPrinterColumns) and the generic default convertor.
//
// This file holds the conversion itself, CRD columns and the default convertor; the built-in
// kinds' printers are in table_printers.cpp, their shared formatting in table_format.cpp and
// the JSONPath subset of CRD columns in jsonpath.cpp.

#include "minicluster/tables.h"

#include <functional>
#include <optional>

#include "kube/time.h"
#include "minicluster/jsonpath.h"
#include "minicluster/registry.h"
#include "minicluster/table_format.h"
#include "minicluster/table_printers.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
using namespace table;

// jsonpath PrintResults for one value: compound values as compact JSON, scalars as text.
std::string printValue(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  // Compound values as JSON, numbers and booleans as Go's %v prints them.
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// cellForJSONValue of the apiextensions table convertor.
json customCell(const std::string& type, const json& v, long long now) {
  if (v.is_null()) return nullptr;
  if (type == "string") return printValue(v);
  if (type == "integer") {
    if (v.is_number()) return integer(v);
  } else if (type == "number") {
    if (v.is_number()) return v.get<double>();
  } else if (type == "boolean") {
    if (v.is_boolean()) return v;
  } else if (type == "date") {
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.empty() || s == "null") return "<unknown>";
      auto t = kube::parseRfc3339Unix(s);
      if (!t) return "<invalid>";
      return humanDuration(now - *t);
    }
  }
  return nullptr;
}

struct CustomPrinter {
  std::vector<Column> columns;
  std::vector<std::string> paths;  // one per column after Name
};

CustomPrinter customPrinter(const ResourceInfo& info) {
  CustomPrinter cp;
  cp.columns.push_back(nameCol());
  const json& cols = info.printerColumns;
  if (!cols.is_array() || cols.empty()) {
    // serveDefaultColumnsIfEmpty: Age from .metadata.creationTimestamp.
    cp.columns.push_back({"Age", "date", "", kAgeDoc, 0});
    cp.paths.push_back(".metadata.creationTimestamp");
    return cp;
  }
  for (const json& c : cols) {
    std::string jsonPath = str(path(c, {"jsonPath"}));
    std::string desc = str(path(c, {"description"}));
    if (desc.empty()) {
      desc = "Custom resource definition column (in JSONPath format): " + jsonPath;
    }
    cp.columns.push_back({str(path(c, {"name"})), str(path(c, {"type"})),
                          str(path(c, {"format"})), desc,
                          static_cast<int>(integer(path(c, {"priority"})))});
    cp.paths.push_back(jsonPath);
  }
  return cp;
}

json customCells(const CustomPrinter& cp, const json& obj, long long now) {
  json cells = json::array({nameOf(obj)});
  for (size_t i = 0; i < cp.paths.size(); ++i) {
    auto results = evalJsonPath(cp.paths[i], obj);
    if (!results || results->empty()) {
      cells.push_back(nullptr);
      continue;
    }
    cells.push_back(customCell(cp.columns[i + 1].type, *results->front(), now));
  }
  return cells;
}

json rowObject(const json& obj, const std::string& includeObject) {
  if (includeObject == "Object") return obj;
  json meta = path(obj, {"metadata"});
  if (!meta.is_object()) meta = json::object();
  return {{"kind", "PartialObjectMetadata"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", std::move(meta)}};
}

}  // namespace

std::string humanDuration(long long seconds) {
  // Upstream tolerates up to 1s of clock skew as "0s"; further into the future is invalid.
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const long long minutes = seconds / 60;
  if (minutes < 10) {
    const long long s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m"
                  : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const long long hours = seconds / 3600;
  if (hours < 8) {
    const long long m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h"
                  : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const long long h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d"
                  : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const long long dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

json makeTable(const ResourceInfo& info, const std::vector<json>& objects, const json& listMeta,
               const std::string& includeObject, long long now) {
  std::vector<Column> columns;
  std::function<json(const json&, json&)> cellsOf;

  std::optional<CustomPrinter> custom;
  const Printer* builtin = nullptr;
  if (info.custom) {
    custom = customPrinter(info);
    columns = custom->columns;
    cellsOf = [&](const json& obj, json&) { return customCells(*custom, obj, now); };
  } else if (auto it = builtinPrinters().find(info.groupResource());
             it != builtinPrinters().end()) {
    builtin = &it->second;
    columns = builtin->columns;
    cellsOf = [&](const json& obj, json& conditions) {
      return builtin->cells(obj, now, conditions);
    };
  } else {
    columns = {nameCol(), ageCol()};
    cellsOf = [&](const json& obj, json&) { return json::array({nameOf(obj), age(obj, now)}); };
  }

  json table = {{"kind", "Table"}, {"apiVersion", "meta.k8s.io/v1"}};
  table["metadata"] = listMeta.is_object() ? listMeta : json::object();
  json defs = json::array();
  for (const Column& c : columns) defs.push_back(columnJson(c));
  table["columnDefinitions"] = std::move(defs);
  json rows = json::array();
  for (const json& obj : objects) {
    json conditions;
    json row = {{"cells", cellsOf(obj, conditions)}};
    if (conditions.is_array()) row["conditions"] = std::move(conditions);
    if (includeObject != "None") row["object"] = rowObject(obj, includeObject);
    rows.push_back(std::move(row));
  }
  table["rows"] = std::move(rows);
  return table;
}

}  // namespace strait::minicluster