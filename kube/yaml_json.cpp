#include "kube/yaml_json.h"

#include "kube/json_parse.h"

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

namespace {

// Splits a stream at "---" lines (document starts) and "..." lines (document ends).
std::vector<std::string> splitDocuments(std::string_view text) {
  std::vector<std::string> docs(1);
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view line = text.substr(i, j - i);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto isMarker = [&](std::string_view m) {
      if (line.substr(0, 3) != m) return false;
      std::string_view rest = line.substr(3);
      return rest.empty() || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '#';
    };
    if (isMarker("---") || isMarker("...")) {
      docs.emplace_back();
      // Content after "--- " on the same line belongs to the new document.
      if (line.substr(0, 4) == "--- " && line.size() > 4) {
        docs.back() += std::string(line.substr(4)) + "\n";
      }
    } else {
      docs.back() += std::string(line) + "\n";
    }
    i = j + 1;
  }
  return docs;
}

// First character that is not whitespace or part of a comment line.
char firstSignificant(const std::string& doc) {
  size_t i = 0;
  while (i < doc.size()) {
    char c = doc[i];
    if (c == '#') {
      i = doc.find('\n', i);
      if (i == std::string::npos) return 0;
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c;
    ++i;
  }
  return 0;
}

}  // namespace

Result<std::vector<nlohmann::json>> yamlDocumentsToJson(std::string_view text) {
  std::vector<nlohmann::json> out;
  for (const std::string& doc : splitDocuments(text)) {
    char first = firstSignificant(doc);
    if (first == 0) continue;
    if (first == '{' || first == '[') {
      // A flow-style document is read as JSON: yaml-cpp 0.7 can loop forever on some
      // malformed top-level flow collections (e.g. `{"a"}, b`), and every JSON document is
      // valid YAML, which is what clients send in this form.
      auto v = parseJson(doc);
      if (!v) {
        return makeError(Code::BadRequest,
                         "yaml: a document that starts with '" + std::string(1, first) +
                             "' must be valid JSON: " + v.error().message);
      }
      out.push_back(std::move(*v));
      continue;
    }
    try {
      YAML::Node n = YAML::Load(doc);
      if (n.IsNull() || !n.IsDefined()) continue;
      auto v = nodeToJson(n, 0);
      if (!v) return v.error();
      out.push_back(std::move(*v));
    } catch (const YAML::Exception& e) {
      return makeError(Code::BadRequest, describe(e));
    } catch (const std::exception& e) {
      return makeError(Code::BadRequest, std::string("yaml: ") + e.what());
    }
  }
  return out;
}

}  // namespace strait::kube
