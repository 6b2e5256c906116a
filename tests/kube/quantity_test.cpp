#include "kube/quantity.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace strait::kube {
namespace {

using Format = Quantity::Format;

Quantity q(std::string_view s) {
  auto r = Quantity::parse(s);
  EXPECT_TRUE(r.ok()) << s << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Quantity();
}

std::string canon(std::string_view s) { return q(s).toString(); }

// Input -> canonical string, values and expectations from upstream quantity_test.go.
const std::vector<std::pair<std::string, std::string>> kCanonical = {
    {"0", "0"},
    {"0n", "0"},
    {"0m", "0"},
    {"0Ki", "0"},
    {"0Ti", "0"},
    {"1", "1"},
    {"1Ki", "1Ki"},
    {"8Ki", "8Ki"},
    {"7Mi", "7Mi"},
    {"6Gi", "6Gi"},
    {"5Ti", "5Ti"},
    {"4Pi", "4Pi"},
    {"3Ei", "3Ei"},
    {"7Ei", "7Ei"},
    {"10Ti", "10Ti"},
    {"100Ti", "100Ti"},
    {"5n", "5n"},
    {"4u", "4u"},
    {"3m", "3m"},
    {"9", "9"},
    {"8k", "8k"},
    {"50k", "50k"},
    {"7M", "7M"},
    {"6G", "6G"},
    {"5T", "5T"},
    {"40T", "40T"},
    {"300T", "300T"},
    {"2P", "2P"},
    {"1E", "1E"},
    {"12E", "12E"},
    {"1000E", "1e21"},
    {"1E-3", "1e-3"},
    {"1e3", "1e3"},
    {"1E6", "1e6"},
    {"1e9", "1e9"},
    {"1E12", "1e12"},
    {"1e15", "1e15"},
    {"1E18", "1e18"},
    {"1e14", "100e12"},
    {"1e13", "10e12"},
    {"12e6", "12e6"},
    {"100.035k", "100035"},
    {"0.001", "1m"},
    {"0.0005k", "500m"},
    {"0.005", "5m"},
    {"0.05", "50m"},
    {"0.5", "500m"},
    {"0.00050k", "500m"},
    {"0.50000", "500m"},
    {"0.5e0", "500e-3"},
    {"0.5e-1", "50e-3"},
    {"0.5e-2", "5e-3"},
    {"10.035M", "10035k"},
    {"1.2e3", "1200"},
    {"1.3E+6", "1300e3"},
    {"1.40e9", "1400e6"},
    {"1.53E12", "1530e9"},
    {"1.6e15", "1600e12"},
    {"1.7E18", "1700e15"},
    {"9.01", "9010m"},
    {"8.1k", "8100"},
    {"7.123456M", "7123456"},
    {"6.987654321G", "6987654321"},
    {"5.444T", "5444G"},
    {"40.1T", "40100G"},
    {"300.2T", "300200G"},
    {"2.5P", "2500T"},
    {"1.01E", "1010P"},
    // Rounding up to nano, away from zero.
    {"3.001n", "4n"},
    {"1.1E-9", "2e-9"},
    {"0.0000000001", "1n"},
    {"0.0000000005", "1n"},
    {"0.00000000050", "1n"},
    {"0.5e-9", "1e-9"},
    {"0.9n", "1n"},
    {"0.00000012345", "124n"},
    {"0.00000012354", "124n"},
    {"1e-2147483648", "1e-9"},
    // BinarySI is capped at 2^63-1.
    {"8Ei", "9223372036854775807"},
    {"9Ei", "9223372036854775807"},
    {"9223372036854775807Ki", "9223372036854775807"},
    // DecimalSI is not capped.
    {"9223372036854775808", "9223372036854775808"},
    {"18446744073709551616", "18446744073709551616"},
    // Fractional binary.
    {"100.035Ki", "102435840m"},
    {"0.5Mi", "512Ki"},
    {"0.05Gi", "53687091200m"},
    {"0.025Ti", "27487790694400m"},
    {"1.5Gi", "1536Mi"},
    {"1024Ki", "1Mi"},
    {"1024Mi", "1Gi"},
    {"1025Ki", "1025Ki"},
    {"0.5Ki", "512"},
    {"1023", "1023"},
    {".001Ki", "1024m"},
    {".000001Ki", "1024u"},
    {".000000001Ki", "1024n"},
    {".000000000001Ki", "2n"},
    {"0.000000000001Ki", "2n"},
    // Odd but valid spellings.
    {".001", "1m"},
    {".0001k", "100m"},
    {"1.", "1"},
    {"1.G", "1G"},
    {"+1", "1"},
    {"-2", "-2"},
    {".5", "500m"},
    {"0001", "1"},
    {"-0", "0"},
    {"00.00", "0"},
    // From the brief.
    {"1000m", "1"},
    {"100m", "100m"},
    {"2k", "2k"},
    {"1000k", "1M"},
    {"1000M", "1G"},
    {"1.5", "1500m"},
    {"1080m", "1080m"},
    {"10800e-4", "1080e-3"},
};

TEST(QuantityTest, ParseAndCanonicalize) {
  for (const auto& [in, want] : kCanonical) {
    auto r = Quantity::parse(in);
    ASSERT_TRUE(r.ok()) << in << ": " << r.error().message;
    EXPECT_EQ(r->toString(), want) << "input " << in;
  }
}

TEST(QuantityTest, NegativeInputsCanonicalizeWithSign) {
  for (const auto& [in, want] : kCanonical) {
    if (in[0] == '-' || in[0] == '+') {
      continue;
    }
    auto r = Quantity::parse("-" + in);
    ASSERT_TRUE(r.ok()) << in << ": " << r.error().message;
    std::string expect = want == "0" ? "0" : "-" + want;
    EXPECT_EQ(r->toString(), expect) << "input -" << in;
    auto plus = Quantity::parse("+" + in);
    ASSERT_TRUE(plus.ok()) << in;
    EXPECT_EQ(plus->toString(), want) << "input +" << in;
  }
}

TEST(QuantityTest, CanonicalFormRoundTrips) {
  for (const auto& [in, want] : kCanonical) {
    Quantity a = q(in);
    auto b = Quantity::parse(a.toString());
    ASSERT_TRUE(b.ok()) << in;
    EXPECT_EQ(a, b.value()) << in;
    EXPECT_EQ(b->toString(), a.toString()) << in;
  }
}

TEST(QuantityTest, FormatFamilyIsRemembered) {
  EXPECT_EQ(q("1Ki").format(), Format::BinarySI);
  EXPECT_EQ(q("0Ki").format(), Format::BinarySI);
  EXPECT_EQ(q("1k").format(), Format::DecimalSI);
  EXPECT_EQ(q("1").format(), Format::DecimalSI);
  EXPECT_EQ(q("1e3").format(), Format::DecimalExponent);
  EXPECT_EQ(q("1E-3").format(), Format::DecimalExponent);
  EXPECT_EQ(q("1E").format(), Format::DecimalSI);  // Exa, not an exponent
  // 0 < |value| < 1 in binary becomes DecimalSI, as upstream.
  EXPECT_EQ(q("0.000000000001Ki").format(), Format::DecimalSI);
  EXPECT_EQ(q("0.5Mi").format(), Format::BinarySI);
}

TEST(QuantityTest, MalformedInputsAreErrors) {
  const char* bad[] = {"",     "1.1.M", "1+1.0M", "0.1mi",         "0.1am",        "aoeu",
                       ".5i",  "1i",    "-3.01i", "-3.01e-",       " 1",           "1 ",
                       "1 Gi", "1Gi ",  "1e",     "1ee3",          "1Ki5",         "1.5.5",
                       "--1",  "+-1",   "1KI",    "1kb",           "Mi",           ".",
                       "+",    "-",     "-.",     "1e99999999999", "1e2147483648", "1x",
                       "1,5",  "0x10",  "1_000",  "\xff"};
  EXPECT_FALSE(Quantity::parse(std::string_view("1\0", 2)).ok());
  for (const char* s : bad) {
    auto r = Quantity::parse(s);
    EXPECT_FALSE(r.ok()) << "parsed unexpectedly: " << s;
    if (!r.ok()) {
      EXPECT_EQ(r.code(), Code::Invalid);
      EXPECT_NE(r.error().message.find("unable to parse quantity"), std::string::npos);
    }
  }
}

TEST(QuantityTest, ErrorMessagesSayWhatIsWrong) {
  auto r = Quantity::parse("1 Gi");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("quantities must match the regular expression"),
            std::string::npos);
  EXPECT_NE(r.error().message.find("\"1 Gi\""), std::string::npos);
  auto s = Quantity::parse("1Ki5");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("suffix"), std::string::npos);
  auto big = Quantity::parse("1234567890123456789012345678901234567890");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("significant digits"), std::string::npos);
}

TEST(QuantityTest, LongInputsDoNotCrash) {
  std::string zeros(100000, '0');
  EXPECT_EQ(canon(zeros), "0");
  EXPECT_EQ(canon("1" + zeros + "e-100000"), "1");
  EXPECT_EQ(canon("0." + zeros + "1"), "1n");
  EXPECT_EQ(canon(std::string(5000, '9') + "Ei"), "9223372036854775807");
  EXPECT_FALSE(Quantity::parse(std::string(100, '7')).ok());
  EXPECT_FALSE(Quantity::parse(std::string(10000, '-')).ok());
}

TEST(QuantityTest, ComparisonIgnoresFormat) {
  EXPECT_EQ(q("1e3"), q("1k"));
  EXPECT_EQ(q("1.5Gi"), q("1536Mi"));
  EXPECT_EQ(q("1000m"), q("1"));
  EXPECT_EQ(q("0"), q("0Ki"));
  EXPECT_EQ(q("-0"), q("0"));
  EXPECT_LT(q("50m"), q("100m"));
  EXPECT_GT(q("100m"), q("50m"));
  EXPECT_GT(q("10000T"), q("100Gi"));
  EXPECT_LT(q("1Ki"), q("1025"));
  EXPECT_GT(q("1Ki"), q("1k"));
  EXPECT_LT(q("-1"), q("1n"));
  EXPECT_LT(q("-2"), q("-1"));
  EXPECT_LT(q("-1e30"), q("-1"));
  EXPECT_GT(q("1e30"), q("9Ei"));
  EXPECT_LT(q("1n"), q("1u"));
  EXPECT_LT(q("999999999n"), q("1"));
  EXPECT_LT(q("1e-9"), q("2n"));
  EXPECT_EQ(q("1e-9"), q("1n"));
  EXPECT_GT(q("1e2147483647"), q("1e2147483646"));
  EXPECT_NE(q("1"), q("2"));
  EXPECT_EQ(q("1") <=> q("1"), std::strong_ordering::equal);
}

TEST(QuantityTest, AdditionIsExact) {
  Quantity sum;
  for (int i = 0; i < 10; ++i) {
    auto r = sum.add(q("0.1"));
    ASSERT_TRUE(r.ok());
    sum = r.value();
  }
  EXPECT_EQ(sum, q("1"));
  EXPECT_EQ(sum.toString(), "1");

  auto cpu = q("100m").add(q("900m"));
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->toString(), "1");

  auto mem = q("1Gi").add(q("512Mi"));
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ(mem->toString(), "1536Mi");

  Quantity third;
  for (int i = 0; i < 3; ++i) {
    third = third.add(q("333333333n")).value();
  }
  EXPECT_EQ(third.toString(), "999999999n");
  EXPECT_EQ(third.add(q("1n")).value(), q("1"));
}

TEST(QuantityTest, ArithmeticKeepsLeftFormatUnlessZero) {
  EXPECT_EQ(q("1Ki").add(q("1k")).value().toString(), "2024");  // BinarySI, < 1024 * 2
  EXPECT_EQ(q("1Ki").add(q("1024")).value().toString(), "2Ki");
  EXPECT_EQ(q("1k").add(q("1Ki")).value().toString(), "2024");
  EXPECT_EQ(q("1k").add(q("1k")).value().toString(), "2k");
  EXPECT_EQ(q("1e3").add(q("1k")).value().toString(), "2e3");
  // Zero takes the other operand's format (upstream TestQuantityAddZeroPreservesSuffix).
  for (const char* s : {"100m", "1Gi"}) {
    EXPECT_EQ(q(s).add(q("0")).value().toString(), s);
    EXPECT_EQ(q("0").add(q(s)).value().toString(), s);
    EXPECT_EQ(q(s).sub(q("0")).value().toString(), s);
    EXPECT_EQ(q("0").sub(q(s)).value().toString(), q(s).negated().toString());
  }
}

TEST(QuantityTest, Subtraction) {
  EXPECT_EQ(q("1").sub(q("100m")).value().toString(), "900m");
  EXPECT_EQ(q("1Gi").sub(q("512Mi")).value().toString(), "512Mi");
  EXPECT_EQ(q("100m").sub(q("1")).value().toString(), "-900m");
  EXPECT_TRUE(q("5").sub(q("5")).value().isZero());
  EXPECT_EQ(q("1").sub(q("1n")).value().toString(), "999999999n");
}

TEST(QuantityTest, LargeValues) {
  auto eight = q("4Ei").add(q("4Ei"));
  ASSERT_TRUE(eight.ok());
  EXPECT_EQ(eight->toString(), "8Ei");  // addition is not capped
  EXPECT_GT(eight.value(), q("8Ei"));
  EXPECT_EQ(q("8Ei").value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(q("7Ei").value(), 7LL << 60);
  EXPECT_EQ(q("-8Ei").toString(), "-9223372036854775807");
  EXPECT_EQ(eight->value(), std::numeric_limits<int64_t>::max());  // saturates
  EXPECT_EQ(q("1e30").value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(q("-1e30").milliValue(), std::numeric_limits<int64_t>::min());
  auto big = q("1e30").add(q("1"));
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->toString(), "1000000000000000000000000000001");
}

TEST(QuantityTest, ArithmeticBeyondPrecisionIsAnError) {
  auto r = q("1e50").add(q("1n"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Invalid);
  EXPECT_FALSE(q("1n").add(q("1e50")).ok());
  EXPECT_TRUE(q("1e50").add(q("1e50")).ok());
  EXPECT_EQ(q("1e50").add(q("1e50")).value().toString(), "200e48");
}

TEST(QuantityTest, ValueAndMilliValueRoundAwayFromZero) {
  EXPECT_EQ(q("1.1").value(), 2);
  EXPECT_EQ(q("-1.1").value(), -2);
  EXPECT_EQ(q("1").value(), 1);
  EXPECT_EQ(q("1n").value(), 1);
  EXPECT_EQ(q("0").value(), 0);
  EXPECT_EQ(q("1Ki").value(), 1024);
  EXPECT_EQ(q("1k").value(), 1000);
  EXPECT_EQ(q("100m").milliValue(), 100);
  EXPECT_EQ(q("1").milliValue(), 1000);
  EXPECT_EQ(q("1n").milliValue(), 1);
  EXPECT_EQ(q("-1n").milliValue(), -1);
  EXPECT_EQ(q("1.5Gi").value(), 1610612736);
  EXPECT_EQ(q("1e-3").milliValue(), 1);
  EXPECT_EQ(q("9.01").milliValue(), 9010);
}

TEST(QuantityTest, FromIntAndFromMilli) {
  EXPECT_EQ(Quantity::fromMilli(1).toString(), "1m");
  EXPECT_EQ(Quantity::fromMilli(1000).toString(), "1");
  EXPECT_EQ(Quantity::fromMilli(1234000).toString(), "1234");
  EXPECT_EQ(Quantity::fromMilli(1024, Format::BinarySI).toString(), "1024m");
  EXPECT_EQ(Quantity::fromMilli(1024 * 1024, Format::BinarySI).toString(), "1048576m");
  EXPECT_EQ(Quantity::fromMilli(1000000, Format::DecimalExponent).toString(), "1e3");
  EXPECT_EQ(Quantity::fromMilli(1500).milliValue(), 1500);
  EXPECT_EQ(Quantity::fromInt(1).toString(), "1");
  EXPECT_EQ(Quantity::fromInt(1000).toString(), "1k");
  EXPECT_EQ(Quantity::fromInt(1234000).toString(), "1234k");
  EXPECT_EQ(Quantity::fromInt(1024, Format::BinarySI).toString(), "1Ki");
  EXPECT_EQ(Quantity::fromInt(1000000, Format::DecimalExponent).toString(), "1e6");
  EXPECT_EQ(Quantity::fromInt(1024 * 1024, Format::BinarySI).toString(), "1Mi");
  EXPECT_EQ(Quantity::fromInt(5, Format::BinarySI).toString(), "5");
  EXPECT_EQ(Quantity::fromInt(1025, Format::BinarySI).toString(), "1025");
  EXPECT_EQ(Quantity::fromMilli(1234567, Format::BinarySI).toString(), "1234567m");
  EXPECT_EQ(Quantity::fromInt(std::numeric_limits<int64_t>::min()).value(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Quantity::fromInt(std::numeric_limits<int64_t>::min()).toString(),
            "-9223372036854775808");
  EXPECT_EQ(Quantity::fromInt(0, Format::BinarySI).toString(), "0");
}

TEST(QuantityTest, NegatedAndSign) {
  EXPECT_EQ(q("9.01").negated().toString(), "-9010m");
  EXPECT_EQ(q("9.01").sign(), 1);
  EXPECT_EQ(q("-9.01").sign(), -1);
  EXPECT_EQ(q("0").sign(), 0);
  EXPECT_TRUE(q("0Mi").isZero());
  EXPECT_FALSE(q("1n").isZero());
  EXPECT_EQ(q("1Gi").negated().toString(), "-1Gi");
}

TEST(QuantityTest, ResourceListParseAndFormat) {
  auto r = parseResourceList(nlohmann::json::parse(
      R"({"cpu":"100m","memory":"1Gi","pods":110,"ephemeral-storage":" 2G ","gpu":0.5})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->at("cpu").milliValue(), 100);
  EXPECT_EQ(r->at("memory").value(), 1LL << 30);
  EXPECT_EQ(r->at("pods").value(), 110);
  EXPECT_EQ(r->at("ephemeral-storage").toString(), "2G");
  EXPECT_EQ(r->at("gpu").toString(), "500m");
  auto out = formatResourceList(r.value());
  EXPECT_EQ(out, nlohmann::json::parse(
                     R"({"cpu":"100m","memory":"1Gi","pods":"110","ephemeral-storage":"2G",
                         "gpu":"500m"})"));
  EXPECT_EQ(q("1.5Gi").toJson(), nlohmann::json("1536Mi"));
}

TEST(QuantityTest, ResourceListErrorsNameTheKey) {
  auto r = parseResourceList(nlohmann::json::parse(R"({"cpu":"100m","memory":"lots"})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Invalid);
  EXPECT_EQ(r.error().field, "memory");
  EXPECT_NE(r.error().message.find("memory"), std::string::npos);
  EXPECT_FALSE(parseResourceList(nlohmann::json::array()).ok());
  EXPECT_FALSE(parseResourceList(nlohmann::json::parse(R"({"cpu":true})")).ok());
  EXPECT_FALSE(parseResourceList(nlohmann::json::parse(R"({"cpu":null})")).ok());
  EXPECT_FALSE(parseResourceList(nlohmann::json::parse(R"({"cpu":{}})")).ok());
  auto empty = parseResourceList(nlohmann::json());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(parseResourceList(nlohmann::json::parse(R"({"big":1e20})")).ok());
}

TEST(QuantityTest, FormatNames) {
  EXPECT_STREQ(formatName(Format::BinarySI), "BinarySI");
  EXPECT_STREQ(formatName(Format::DecimalSI), "DecimalSI");
  EXPECT_STREQ(formatName(Format::DecimalExponent), "DecimalExponent");
}

}  // namespace
}  // namespace strait::kube
