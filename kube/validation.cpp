#include "kube/validation.h"

namespace strait::kube {

namespace {

// Specification constants (apimachinery).
constexpr size_t kDns1123LabelMaxLength = 63;
constexpr size_t kDns1123SubdomainMaxLength = 253;
constexpr size_t kDns1035LabelMaxLength = 63;
constexpr size_t kLabelKeyMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;

constexpr std::string_view kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1123LabelErrMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr std::string_view kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kDns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1035LabelErrMsg =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character";
constexpr std::string_view kLabelKeyFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kLabelKeyErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";

bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool isAlnum(char c) { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
bool matchesDns1123Label(std::string_view s) {
  if (s.empty() || !isLowerAlnum(s.front()) || !isLowerAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!isLowerAlnum(c) && c != '-') {
      return false;
    }
  }
  return true;
}

bool matchesDns1123Subdomain(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (!matchesDns1123Label(label)) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

// ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$
bool matchesLabelKeyName(std::string_view s) {
  if (s.empty() || !isAlnum(s.front()) || !isAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!isAlnum(c) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string maxLenError(size_t length) {
  return "must be no more than " + std::to_string(length) + " characters";
}

std::string emptyError() { return "must be non-empty"; }

std::string regexError(std::string_view msg, std::string_view regex,
                       const std::vector<std::string>& examples) {
  std::string out(msg);
  if (examples.empty()) {
    return out + " (regex used for validation is '" + std::string(regex) + "')";
  }
  out += " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) {
      out += " or ";
    }
    out += "'" + examples[i] + "', ";
  }
  out += "regex used for validation is '" + std::string(regex) + "')";
  return out;
}

std::vector<std::string> validateDns1123Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123LabelMaxLength) {
    errs.push_back(maxLenError(kDns1123LabelMaxLength));
  }
  if (!matchesDns1123Label(value)) {
    if (matchesDns1123Subdomain(value)) {
      errs.push_back("must not contain dots");
    } else {
      errs.push_back(regexError(kDns1123LabelErrMsg, kDns1123LabelFmt, {"my-name", "123-abc"}));
    }
  }
  return errs;
}

std::vector<std::string> validateDns1123Subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123SubdomainMaxLength) {
    errs.push_back(maxLenError(kDns1123SubdomainMaxLength));
  }
  if (!matchesDns1123Subdomain(value)) {
    errs.push_back(regexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

std::vector<std::string> validateDns1035Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1035LabelMaxLength) {
    errs.push_back(maxLenError(kDns1035LabelMaxLength));
  }
  bool ok = matchesDns1123Label(value) && value.front() >= 'a' && value.front() <= 'z';
  if (!ok) {
    errs.push_back(regexError(kDns1035LabelErrMsg, kDns1035LabelFmt, {"my-name", "abc-123"}));
  }
  return errs;
}

std::vector<std::string> validateLabelKey(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name;
  size_t slash = value.find('/');
  if (slash == std::string_view::npos) {
    name = value;
  } else if (value.find('/', slash + 1) == std::string_view::npos) {
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part " + emptyError());
    } else {
      for (auto& msg : validateDns1123Subdomain(prefix)) {
        errs.push_back("prefix part " + msg);
      }
    }
  } else {
    errs.push_back("a valid label key " +
                   regexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}) +
                   " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errs;
  }
  if (name.empty()) {
    errs.push_back("name part " + emptyError());
  } else if (name.size() > kLabelKeyMaxLength) {
    errs.push_back("name part " + maxLenError(kLabelKeyMaxLength));
  }
  if (!matchesLabelKeyName(name)) {
    errs.push_back("name part " +
                   regexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> validateQualifiedName(std::string_view value) {
  return validateLabelKey(value);
}

std::vector<std::string> validateLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) {
    errs.push_back(maxLenError(kLabelValueMaxLength));
  }
  if (!value.empty() && !matchesLabelKeyName(value)) {
    errs.push_back(regexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

}  // namespace strait::kube
