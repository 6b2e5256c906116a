#include "kube/validation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strait::kube {
namespace {

using Errs = std::vector<std::string>;

const std::string kSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const std::string kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const std::string kKeyNameMsg =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

TEST(ValidationTest, Dns1123Subdomain) {
  for (std::string ok :
       std::vector<std::string>{"a", "ab", "a-b", "a.b", "0", "01", "a.b.c", "a--b", "1.2.3.4",
                                "example.com", std::string(253, 'a')}) {
    if (ok.size() == 253) {
      // 253 characters of valid labels.
      ok = std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
           std::string(61, 'd');
      ASSERT_EQ(ok.size(), 253u);
    }
    EXPECT_EQ(validateDns1123Subdomain(ok), Errs{}) << ok;
  }
  for (std::string bad : std::vector<std::string>{"", "A", "a_b", "-a", "a-", ".a", "a.", "a..b",
                                                  "a.-b", "a b", "ä", "a/b", "a*"}) {
    EXPECT_EQ(validateDns1123Subdomain(bad), Errs{kSubdomainMsg}) << bad;
  }
  EXPECT_EQ(validateDns1123Subdomain(std::string(254, 'a')),
            (Errs{"must be no more than 253 characters"}));
  EXPECT_EQ(validateDns1123Subdomain(std::string(254, 'A')),
            (Errs{"must be no more than 253 characters", kSubdomainMsg}));
}

TEST(ValidationTest, Dns1123Label) {
  for (std::string ok :
       std::vector<std::string>{"a", "0", "a-b", "a--b", "abc123", std::string(63, 'a')}) {
    EXPECT_EQ(validateDns1123Label(ok), Errs{}) << ok;
  }
  for (std::string bad : std::vector<std::string>{"", "A", "-a", "a-", "a_b", "a b", "ü"}) {
    EXPECT_EQ(validateDns1123Label(bad), Errs{kLabelMsg}) << bad;
  }
  EXPECT_EQ(validateDns1123Label("a.b"), Errs{"must not contain dots"});
  EXPECT_EQ(validateDns1123Label(std::string(64, 'a')),
            (Errs{"must be no more than 63 characters"}));
}

TEST(ValidationTest, Dns1035Label) {
  EXPECT_EQ(validateDns1035Label("my-svc"), Errs{});
  EXPECT_EQ(validateDns1035Label("a1"), Errs{});
  EXPECT_EQ(validateDns1035Label("1a").size(), 1u);
  EXPECT_EQ(validateDns1035Label("").size(), 1u);
  EXPECT_EQ(validateDns1035Label("a-").size(), 1u);
  EXPECT_NE(validateDns1035Label("1a")[0].find("start with an alphabetic character"),
            std::string::npos);
}

TEST(ValidationTest, LabelKey) {
  for (std::string ok : std::vector<std::string>{
           "a", "A", "a.b", "a_b", "a-b", "1", "MyName", "my.name", "123-abc", "example.com/MyName",
           "k8s.io/app", "a/b", std::string(63, 'x'), "a.b.c/" + std::string(63, 'x')}) {
    EXPECT_EQ(validateLabelKey(ok), Errs{}) << ok;
    EXPECT_EQ(validateQualifiedName(ok), Errs{}) << ok;
  }
  EXPECT_EQ(validateLabelKey(""), (Errs{"name part must be non-empty", kKeyNameMsg}));
  EXPECT_EQ(validateLabelKey("-a"), Errs{kKeyNameMsg});
  EXPECT_EQ(validateLabelKey("a-"), Errs{kKeyNameMsg});
  EXPECT_EQ(validateLabelKey("a b"), Errs{kKeyNameMsg});
  EXPECT_EQ(validateLabelKey(std::string(64, 'a')),
            (Errs{"name part must be no more than 63 characters"}));
  EXPECT_EQ(validateLabelKey("/a"), (Errs{"prefix part must be non-empty"}));
  EXPECT_EQ(validateLabelKey("a/"), (Errs{"name part must be non-empty", kKeyNameMsg}));
  EXPECT_EQ(validateLabelKey("Example.com/a"), (Errs{"prefix part " + kSubdomainMsg}));
  EXPECT_EQ(validateLabelKey(std::string(254, 'a') + "/a"),
            (Errs{"prefix part must be no more than 253 characters"}));
  auto multi = validateLabelKey("a/b/c");
  ASSERT_EQ(multi.size(), 1u);
  EXPECT_EQ(multi[0],
            "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
            "or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')");
}

TEST(ValidationTest, LabelValue) {
  for (std::string ok : std::vector<std::string>{"", "a", "A", "1", "a.b", "a_b", "a-b", "MyValue",
                                                 "my_value", "12345", std::string(63, 'v')}) {
    EXPECT_EQ(validateLabelValue(ok), Errs{}) << ok;
  }
  for (std::string bad : std::vector<std::string>{"-a", "a-", "_a", "a b", "a/b", "a=b", "é"}) {
    EXPECT_EQ(validateLabelValue(bad), Errs{kValueMsg}) << bad;
  }
  EXPECT_EQ(validateLabelValue(std::string(64, 'v')), (Errs{"must be no more than 63 characters"}));
}

TEST(ValidationTest, MessageHelpers) {
  EXPECT_EQ(maxLenError(5), "must be no more than 5 characters");
  EXPECT_EQ(emptyError(), "must be non-empty");
  EXPECT_EQ(regexError("bad", "x+", {}), "bad (regex used for validation is 'x+')");
  EXPECT_EQ(regexError("bad", "x+", {"x", "xx"}),
            "bad (e.g. 'x',  or 'xx', regex used for validation is 'x+')");
}

}  // namespace
}  // namespace strait::kube
