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

// The text is validated up to the end of the member found, the members before it included:
// a malformed value anywhere there is nullopt, not a span that parses to something else.
TEST(JsonMemberTest, MalformedValueBeforeOrInTheMemberIsNullopt) {
  for (const char* text :
       {R"({"x":[1 2],"a":3})", R"({"x":nul,"a":3})", R"({"x":01,"a":3})", R"({"x":"\q","a":3})",
        "{\"x\":\"raw\ttab\",\"a\":3}", R"({"x":{"k" 1},"a":3})", R"({"x":[1,],"a":3})",
        R"({"x":{"k":1,},"a":3})", R"({"x":1e400,"a":3})", R"({"a":{"b":}})", R"({"a":tru})",
        R"({"a":-})", R"({"a":[1,]})", R"({"a":{"b":1]})", R"({"a":[{"b":1}}])",
        R"({"a":"\uZZZZ"})", R"({"a":"\ud800"})", R"({"a":.5})"}) {
    EXPECT_FALSE(jsonMember(text, "a")) << text;
  }
  const std::string withNul("{\"x\":\"a\0b\",\"a\":3}", 17);
  EXPECT_FALSE(jsonMember(withNul, "a"));
  const std::string nulInMember("{\"a\":\"a\0b\"}", 11);
  EXPECT_FALSE(jsonMember(nulInMember, "a"));
}

// Deep nesting costs heap, not call stack; strings longer than the reader's stack buffer are
// read whole.
TEST(JsonMemberTest, DeepNestingAndLongStrings) {
  const size_t depth = 200000;
  const std::string deep(depth, '[');
  const std::string closed(depth, ']');
  EXPECT_EQ(jsonMember(R"({"x":)" + deep + "1" + closed + R"(,"a":1})", "a").value(), "1");
  EXPECT_EQ(jsonMember(R"({"a":)" + deep + closed + "}", "a").value(), deep + closed);
  EXPECT_FALSE(jsonMember(R"({"x":)" + deep + "1 2" + closed + R"(,"a":1})", "a"));
  EXPECT_FALSE(jsonMember(R"({"a":)" + deep + "1", "a"));

  const std::string longKey(100000, 'k');
  const std::string longValue = "\"" + std::string(300000, 'v') + "\\n\"";
  const std::string text = "{\"" + longKey + "\":" + longValue + ",\"a\":" + longValue + "}";
  EXPECT_EQ(jsonMember(text, longKey).value(), longValue);
  EXPECT_EQ(jsonMember(text, "a").value(), longValue);
}

// The span views the caller's text; nothing past the end of the view or of the member is
// read (a view into a longer buffer, as the nested lookups pass, is not null-terminated).
TEST(JsonMemberTest, ReadsNeitherPastTheViewNorPastTheMember) {
  const std::string text = R"({"kind":"Pod","metadata":{"resourceVersion":"0"}})";
  auto meta = jsonMember(text, "metadata");
  ASSERT_TRUE(meta);
  EXPECT_EQ(meta->data(), text.data() + text.find("{\"resourceVersion"));
  auto rv = jsonMember(*meta, "resourceVersion");
  ASSERT_TRUE(rv);
  EXPECT_EQ(rv->data(), text.data() + text.find("\"0\""));

  const std::string buffer = R"({"a":"xy","b":123})";
  const std::string_view view(buffer);
  EXPECT_FALSE(jsonMember(view.substr(0, 7), "a"));             // {"a":"x
  EXPECT_EQ(jsonMember(view.substr(0, 15), "b").value(), "1");  // {"a":"xy","b":1
  EXPECT_FALSE(jsonMember(view.substr(0, 13), "b"));            // {"a":"xy","b"
  EXPECT_FALSE(jsonMember(view.substr(0, 0), "a"));

  EXPECT_EQ(jsonMember(R"({"a":1,)", "a").value(), "1");
  EXPECT_EQ(jsonMember(R"({"a":{"b":[true]}} trailing)", "a").value(), R"({"b":[true]})");
  EXPECT_EQ(jsonMember(R"({"a":1,"a":2})", "a").value(), "1");  // the first of a repeated key
  EXPECT_FALSE(jsonMember(R"({"x":1} {"a":2})", "a"));          // not a member of the object
}

}  // namespace
}  // namespace strait::minicluster
