#include "minicluster/json_scan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace strait::minicluster {
namespace {

TEST(JsonMemberTest, FindsTopLevelMembersOnly) {
  const std::string text =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","resourceVersion":"7"},)"
      R"("spec":{"metadata":{"name":"inner"},"containers":[{"name":"a","args":["}",",{"]}]},)"
      R"("status":{}})";
  EXPECT_EQ(jsonMember(text, "apiVersion").value(), R"("v1")");
  EXPECT_EQ(jsonMember(text, "metadata").value(), R"({"name":"web","resourceVersion":"7"})");
  EXPECT_EQ(jsonMember(text, "spec").value(),
            R"({"metadata":{"name":"inner"},"containers":[{"name":"a","args":["}",",{"]}]})");
  EXPECT_EQ(jsonMember(text, "status").value(), "{}");
  EXPECT_FALSE(jsonMember(text, "containers"));  // nested, not a member of the top object
  EXPECT_FALSE(jsonMember(text, "name"));
  auto meta = jsonMember(text, "metadata");
  EXPECT_EQ(jsonMember(*meta, "resourceVersion").value(), R"("7")");
}

TEST(JsonMemberTest, StringsWithEscapesAndWhitespace) {
  const std::string text = " { \"a\\\"}\" : \"x\\\\\" ,\n \"b\" :\t[1, {\"c\": \"]\"}] , \"n\": -1.5e3, "
                           "\"t\":true,\"z\":null } ";
  EXPECT_EQ(jsonMember(text, "a\\\"}").value(), R"("x\\")");
  EXPECT_EQ(jsonMember(text, "b").value(), R"([1, {"c": "]"}])");
  EXPECT_EQ(jsonMember(text, "n").value(), "-1.5e3");
  EXPECT_EQ(jsonMember(text, "t").value(), "true");
  EXPECT_EQ(jsonMember(text, "z").value(), "null");
}

TEST(JsonMemberTest, AgreesWithTheParserOnDumpedObjects) {
  nlohmann::json container;
  container["name"] = "c";
  container["command"] = nlohmann::json::array({"sh", "-c", "echo \"}\\\""});
  nlohmann::json pod;
  pod["kind"] = "Pod";
  pod["metadata"]["name"] = "p";
  pod["metadata"]["labels"]["a\"b"] = "{[";
  pod["metadata"]["resourceVersion"] = "0";
  pod["spec"]["containers"].push_back(container);
  const std::string text = pod.dump();
  for (const char* key : {"kind", "metadata", "spec"}) {
    auto member = jsonMember(text, key);
    ASSERT_TRUE(member) << key;
    EXPECT_EQ(nlohmann::json::parse(*member), pod[key]) << key;
  }
}

TEST(JsonMemberTest, MalformedOrNotAnObjectIsNullopt) {
  EXPECT_FALSE(jsonMember("", "a"));
  EXPECT_FALSE(jsonMember("[1,2]", "a"));
  EXPECT_FALSE(jsonMember("\"a\"", "a"));
  EXPECT_FALSE(jsonMember("{}", "a"));
  EXPECT_FALSE(jsonMember(R"({"a":)", "a"));
  EXPECT_FALSE(jsonMember(R"({"a":{"b":1)", "a"));
  EXPECT_FALSE(jsonMember(R"({"a":"unterminated)", "a"));
  EXPECT_FALSE(jsonMember(R"({"x":1 "a":2})", "a"));  // missing comma before it
  EXPECT_FALSE(jsonMember(R"({"x\)", "x"));
  EXPECT_FALSE(jsonMember(R"({a:1})", "a"));
}

}  // namespace
}  // namespace strait::minicluster
