#include "egress/options.h"

#include <gtest/gtest.h>

#include <vector>

namespace skillmcp::egress {
namespace {

std::optional<Options> Parse(std::vector<const char*> args, std::string* error) {
  args.insert(args.begin(), "skill-mcp-egress");
  return ParseOptions(static_cast<int>(args.size()), args.data(), error);
}

TEST(EgressOptionsTest, DefaultsAndValues) {
  std::string error;
  std::optional<Options> o = Parse({}, &error);
  ASSERT_TRUE(o.has_value()) << error;
  EXPECT_FALSE(o->connection_fd.has_value());
  EXPECT_EQ(o->connect_timeout_ms, kDefaultConnectTimeoutMs);
  EXPECT_EQ(o->request_timeout_ms, kDefaultRequestTimeoutMs);
  o = Parse({"--connection-fd", "9", "--connect-timeout-ms", "250", "--request-timeout-ms", "900"},
            &error);
  ASSERT_TRUE(o.has_value()) << error;
  EXPECT_EQ(o->connection_fd, 9);
  EXPECT_EQ(o->connect_timeout_ms, 250);
  EXPECT_EQ(o->request_timeout_ms, 900);
  o = Parse({"--help"}, &error);
  ASSERT_TRUE(o.has_value());
  EXPECT_TRUE(o->help);
}

TEST(EgressOptionsTest, BadArgumentsSayWhich) {
  const std::vector<std::vector<const char*>> bad = {
      {"--connection-fd"},
      {"--connection-fd", "2"},
      {"--connection-fd", "x"},
      {"--connection-fd", "3x"},
      {"--connect-timeout-ms", "0"},
      {"--connect-timeout-ms", "600001"},
      {"--connect-timeout-ms", "-5"},
      {"--request-timeout-ms", "0"},
      {"--request-timeout-ms", "600001"},
      {"--request-timeout-ms"},
      {"--verbose"},
      {"3"},
  };
  for (const auto& args : bad) {
    std::string error;
    EXPECT_FALSE(Parse(args, &error).has_value()) << args[0];
    EXPECT_NE(error.find(args[0]), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace skillmcp::egress
