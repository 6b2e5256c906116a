#include "kube/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <regex>

namespace strait::kube {
namespace {

using nlohmann::json;

json scalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "?") {  // quoted or explicitly tagged: a string
    if (n.Tag() == "tag:yaml.org,2002:int" || n.Tag() == "!!int") {
      return json(std::strtoll(s.c_str(), nullptr, 10));
    }
    return json(s);
  }
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return json(true);
  if (s == "false" || s == "False" || s == "FALSE") return json(false);
  static const std::regex intRe("[-+]?[0-9]+");
  static const std::regex floatRe(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, intRe)) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return json(v);
    return json(std::strtod(s.c_str(), nullptr));
  }
  if (std::regex_match(s, floatRe)) return json(std::strtod(s.c_str(), nullptr));
  return json(s);
}

Result<json> nodeToJson(const YAML::Node& n, int depth) {
  if (depth > 200) return makeError(Code::BadRequest, "yaml: document nested too deeply");
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return json(nullptr);
    case YAML::NodeType::Scalar:
      return scalarToJson(n);
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& item : n) {
        auto v = nodeToJson(item, depth + 1);
        if (!v) return v;
        arr.push_back(std::move(*v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) {
          return makeError(Code::BadRequest, "yaml: mapping keys must be scalars");
        }
        auto v = nodeToJson(kv.second, depth + 1);
        if (!v) return v;
        obj[kv.first.Scalar()] = std::move(*v);
      }
      return obj;
    }
  }
  return json(nullptr);
}

std::string describe(const YAML::Exception& e) {
  return "yaml: line " + std::to_string(e.mark.line + 1) + ", column " +
         std::to_string(e.mark.column + 1) + ": " + e.msg;
}

}  // namespace

Result<nlohmann::json> yamlToJson(std::string_view text) {
  auto docs = yamlDocumentsToJson(text);
  if (!docs) return docs.error();
  if (docs->empty()) return makeError(Code::BadRequest, "yaml: empty document");
  if (docs->size() > 1) {
    return makeError(Code::BadRequest, "yaml: expected one document, found " +
                                           std::to_string(docs->size()));
  }
  return std::move((*docs)[0]);
}

Result<std::vector<nlohmann::json>> yamlDocumentsToJson(std::string_view text) {
  try {
    std::vector<YAML::Node> nodes = YAML::LoadAll(std::string(text));
    std::vector<nlohmann::json> out;
    for (const auto& n : nodes) {
      if (n.IsNull() || !n.IsDefined()) continue;
      auto v = nodeToJson(n, 0);
      if (!v) return v.error();
      out.push_back(std::move(*v));
    }
    return out;
  } catch (const YAML::Exception& e) {
    return makeError(Code::BadRequest, describe(e));
  } catch (const std::exception& e) {
    return makeError(Code::BadRequest, std::string("yaml: ") + e.what());
  }
}

}  // namespace strait::kube
