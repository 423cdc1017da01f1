// The network setting: parsed strictly, settled on off (never on) where runs get no
// namespaces, and refused where off cannot hold (broker/run/network_mode.h).
#include "broker/run/network_mode.h"

#include <gtest/gtest.h>

#include <string>

#include "broker/run/launch_config.h"
#include "broker/run/public_suffix.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

LaunchConfig Resolved(const EnvStore& env, std::string* error) {
  LaunchConfig c;
  *error = ResolveNetwork(env, "", c);
  return c;
}

TEST(ResolveNetwork, DeclaredIsTheDefaultAndEachModeIsNamed) {
  std::string error;
  LaunchConfig c = Resolved(EnvStore(), &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(c.network_mode, NetworkMode::kDeclared);
  EXPECT_FALSE(c.egress.patterns.has_value());
  EXPECT_FALSE(c.egress.allow_local);
  EXPECT_EQ(c.egress.socket_path, "");
  for (const auto& [text, mode] :
       {std::pair{"declared", NetworkMode::kDeclared}, std::pair{"on", NetworkMode::kOn},
        std::pair{"off", NetworkMode::kOff}}) {
    EnvStore env;
    env.Set("SKILL_MCP_NETWORK", text);
    EXPECT_EQ(Resolved(env, &error).network_mode, mode) << text;
    EXPECT_EQ(error, "");
    EXPECT_STREQ(NetworkModeName(mode), text);
  }
}

TEST(ResolveNetwork, AMistypedSettingStopsTheBoot) {
  const std::pair<const char*, const char*> bad[] = {
      {"SKILL_MCP_NETWORK", "yes"},
      {"SKILL_MCP_NETWORK", "Declared"},
      {"SKILL_MCP_EGRESS_ALLOW", "api..example.com"},
      {"SKILL_MCP_EGRESS_ALLOW", "api.example.com:0"},
      {"SKILL_MCP_EGRESS_LOCAL", "1"},
      {"SKILL_MCP_EGRESS_RESOLVE", "api.example.com"},
      {"SKILL_MCP_EGRESS_RESOLVE", "api.example.com=other.example.com"},
      {"SKILL_MCP_EGRESS_RESOLVE", "127.0.0.1=127.0.0.2"},
      {"SKILL_MCP_EGRESS_RESOLVE", "a.example=127.0.0.1,a.example=127.0.0.2"},
      {"SKILL_MCP_EGRESS_SOCKET", "run/egress.sock"},
      {"SKILL_MCP_EGRESS_HELPER", "skill-mcp-egress"},
  };
  for (const auto& [name, value] : bad) {
    EnvStore env;
    env.Set(name, value);
    std::string error;
    Resolved(env, &error);
    EXPECT_NE(error.find(name), std::string::npos) << name << "=" << value << ": " << error;
  }
}

TEST(ResolveNetwork, TheEgressSettingsAreRead) {
  EnvStore env;
  env.Set("SKILL_MCP_EGRESS_ALLOW", "api.example.com:8443, *.example.org");
  env.Set("SKILL_MCP_EGRESS_LOCAL", "on");
  env.Set("SKILL_MCP_EGRESS_RESOLVE", "\tAPI.example.com=127.0.0.1 ,, b.example=::1 ,");
  env.Set("SKILL_MCP_EGRESS_SOCKET", "/run/skill-mcp/egress.sock");
  env.Set("SKILL_MCP_EGRESS_HELPER", "/opt/egress");
  std::string error;
  LaunchConfig c = Resolved(env, &error);
  ASSERT_EQ(error, "");
  ASSERT_TRUE(c.egress.patterns.has_value());
  EXPECT_EQ(c.egress.patterns->size(), 2u);
  EXPECT_TRUE(c.egress.allow_local);
  ASSERT_NE(EgressPin(c.egress, "api.example.com"), nullptr);
  EXPECT_EQ(*EgressPin(c.egress, "api.example.com"), "127.0.0.1");
  EXPECT_EQ(*EgressPin(c.egress, "b.example"), "::1");
  EXPECT_EQ(EgressPin(c.egress, "c.example"), nullptr);
  EXPECT_EQ(c.egress.pins.size(), 2u);  // the blank entries are none
  EXPECT_EQ(c.egress.socket_path, "/run/skill-mcp/egress.sock");
  EXPECT_EQ(c.egress.helper_path, "/opt/egress");
  // "none" is an empty list: nothing is allowed (a blank value counts as unset).
  EnvStore none;
  none.Set("SKILL_MCP_EGRESS_ALLOW", "none");
  LaunchConfig n = Resolved(none, &error);
  ASSERT_TRUE(n.egress.patterns.has_value());
  EXPECT_TRUE(n.egress.patterns->empty());
}

// why: the operator asked that runs reach only what they declare; a host without
// namespaces must give them nothing, never the host's network.
TEST(SettleNetwork, DeclaredFallsBackToOffNeverOn) {
  LaunchConfig c;
  c.network_mode = NetworkMode::kDeclared;
  c.namespaces = true;
  SettleNetwork(c);
  EXPECT_TRUE(c.egress_declared);
  EXPECT_FALSE(c.network_off);
  c.namespaces = false;
  c.namespaces_off_reason = "the probe failed";
  SettleNetwork(c);
  EXPECT_FALSE(c.egress_declared);
  EXPECT_TRUE(c.network_off);
  EXPECT_NE(c.network_fallback.find("the probe failed"), std::string::npos) << c.network_fallback;
  // While the probe decides, declared stands (no run starts before it has).
  c.namespaces_pending = true;
  SettleNetwork(c);
  EXPECT_TRUE(c.egress_declared);
  // The other modes are what they say, namespaces or not.
  c.network_mode = NetworkMode::kOn;
  SettleNetwork(c);
  EXPECT_FALSE(c.egress_declared || c.network_off);
  c.network_mode = NetworkMode::kOff;
  SettleNetwork(c);
  EXPECT_TRUE(c.network_off);
  EXPECT_FALSE(c.egress_declared);
  EXPECT_EQ(c.network_fallback, "");
}

TEST(NetworkRefusal, OffNeedsTheSeccompFenceOrLandlockTcp) {
  LaunchConfig c;
  c.network_mode = NetworkMode::kOff;
  SettleNetwork(c);
  c.seccomp = true;
  EXPECT_EQ(NetworkRefusal(c), "");
  c.seccomp = false;
  c.landlock_abi = 4;
  EXPECT_EQ(NetworkRefusal(c), "");
  c.landlock_abi = 3;
  EXPECT_NE(NetworkRefusal(c).find("SKILL_MCP_NETWORK=off"), std::string::npos);
  c.network_mode = NetworkMode::kOn;
  SettleNetwork(c);
  EXPECT_EQ(NetworkRefusal(c), "");
}

// The decided namespaces settle the mode: a probe that fails turns declared into off.
TEST(ResolveLaunchConfig, NoNamespacesSettleDeclaredOnOff) {
  EnvStore env;
  env.Set("SKILL_MCP_WORKER", SKILL_MCP_TEST_WORKER);
  env.Set("SKILL_MCP_NODE", "/usr/bin/node");
  env.Set("SKILL_MCP_NAMESPACES", "off");
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_TRUE(r.config->network_off);
  EXPECT_FALSE(r.config->egress_declared);
  EXPECT_NE(r.config->network_fallback.find("SKILL_MCP_NAMESPACES=off"), std::string::npos);
  EXPECT_TRUE(r.config->ready()) << r.config->refusal;
  // The inet fence is compiled for it.
  EXPECT_GT(r.config->seccomp_bpf_inet.size(), r.config->seccomp_bpf.size());
}

// The mirror's own filter is compiled wherever runs may be declared, and only there.
TEST(ResolveLaunchConfig, TheMirrorsFilterIsCompiledWhereRunsMayBeDeclared) {
  for (const char* mode : {"declared", "on", "off"}) {
    EnvStore env;
    env.Set("SKILL_MCP_WORKER", SKILL_MCP_TEST_WORKER);
    env.Set("SKILL_MCP_NODE", "/usr/bin/node");
    env.Set("SKILL_MCP_NETWORK", mode);
    LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
    ASSERT_TRUE(r.config) << r.error;
    const std::string& bpf = r.config->seccomp_bpf_mirror;
    if (std::string_view(mode) == "declared") {
      EXPECT_TRUE(IsPlausibleBpf(bpf)) << bpf.size();
    } else {
      EXPECT_TRUE(bpf.empty()) << mode;
    }
  }
}

TEST(RunEgressRules, OnlyInTheDeclaredModeAndNarrowedByThePatterns) {
  EXPECT_EQ(RunEgressRules(EgressPolicy{false, std::nullopt}, {"api.example.com"}), std::nullopt);
  auto all = RunEgressRules(EgressPolicy{true, std::nullopt}, {"api.example.com"});
  ASSERT_TRUE(all.has_value());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].ports, (std::vector<uint16_t>{80, 443}));
  // A declared address is not shown as allowed: a run reaches names only.
  auto named = RunEgressRules(EgressPolicy{true, std::nullopt}, {"192.0.2.1", "api.example.com"});
  ASSERT_EQ(named->size(), 1u);
  EXPECT_EQ((*named)[0].host, "api.example.com");
  auto none = RunEgressRules(EgressPolicy{true, std::vector<EgressPattern>{}}, {"api.example.com"});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

std::vector<std::string> Hosts(const std::optional<std::vector<EgressRule>>& rules) {
  std::vector<std::string> out;
  for (const EgressRule& r : rules.value()) out.push_back(r.host);
  return out;
}

TEST(RunEgressRules, NoWildcardOverAPublicSuffixUnlessTheOperatorNamesIt) {
  const std::vector<std::string> declared = {"*.co.uk", "*.github.io", "*.s3.amazonaws.com",
                                             "*.example.com", "*.lab.internal", "pages.github.io"};
  // ICANN's suffixes and the private section's go; a wildcard under a registrable name,
  // one under a top-level domain the list does not know and an exact name under a public
  // suffix stay. (A wildcard over one label, "*.com", never normalises.)
  EXPECT_EQ(Hosts(RunEgressRules(EgressPolicy{true, std::nullopt}, declared)),
            (std::vector<std::string>{"*.example.com", "*.lab.internal", "pages.github.io"}));
  // The operator's own pattern for that very wildcard keeps it; a pattern covering it
  // from above does not.
  std::string error;
  auto patterns = ParseEgressPatterns("*.github.io, *.example.com", &error);
  ASSERT_TRUE(patterns) << error;
  EXPECT_EQ(Hosts(RunEgressRules(EgressPolicy{true, patterns}, {"*.github.io", "*.example.com"})),
            (std::vector<std::string>{"*.github.io", "*.example.com"}));
  auto wider = ParseEgressPatterns("*.amazonaws.com", &error);
  ASSERT_TRUE(wider) << error;
  EXPECT_TRUE(RunEgressRules(EgressPolicy{true, wider}, {"*.s3.amazonaws.com"})->empty());
}

TEST(PublicSuffix, ExplicitRulesOnly) {
  ASSERT_TRUE(LoadPublicSuffixes());
  EXPECT_TRUE(IsPublicSuffix("com"));
  EXPECT_TRUE(IsPublicSuffix("co.uk"));
  EXPECT_TRUE(IsPublicSuffix("github.io"));
  EXPECT_FALSE(IsPublicSuffix("example.com"));
  EXPECT_FALSE(IsPublicSuffix("internal"));  // only by the implicit "*" rule
  EXPECT_FALSE(IsPublicSuffix("egress.test"));
}

TEST(PublicSuffix, TheShortestUnderABase) {
  ASSERT_TRUE(LoadPublicSuffixes());
  EXPECT_EQ(PublicSuffixUnder("bucket.s3.amazonaws.com", "amazonaws.com"), "s3.amazonaws.com");
  EXPECT_EQ(PublicSuffixUnder("a.b.s3.amazonaws.com", "amazonaws.com"), "s3.amazonaws.com");
  EXPECT_EQ(PublicSuffixUnder("s3.amazonaws.com", "amazonaws.com"), "s3.amazonaws.com");
  EXPECT_EQ(PublicSuffixUnder("api.amazonaws.com", "amazonaws.com"), "");
  EXPECT_EQ(PublicSuffixUnder("a.b.example.com", "example.com"), "");
  // Not under the base at all, or the base itself: nothing.
  EXPECT_EQ(PublicSuffixUnder("s3.amazonaws.com", "s3.amazonaws.com"), "");
  EXPECT_EQ(PublicSuffixUnder("xamazonaws.com", "amazonaws.com"), "");
}

TEST(RunConnectRefusal, AWildcardStopsAtAPublicSuffixBelowItsBase) {
  const std::vector<EgressRule> rules = {{"*.amazonaws.com", {443}}, {"cdn.s3.amazonaws.com", {443}}};
  const std::optional<std::vector<EgressPattern>> unset;
  EXPECT_EQ(RunConnectRefusal(rules, unset, "api.amazonaws.com", 443), "");
  EXPECT_NE(RunConnectRefusal(rules, unset, "bucket.s3.amazonaws.com", 443).find("under s3.amazonaws.com"),
            std::string::npos);
  EXPECT_NE(RunConnectRefusal(rules, unset, "s3.amazonaws.com", 443), "");
  // A name declared exactly is the skill's own claim, shown as such in the preview.
  EXPECT_EQ(RunConnectRefusal(rules, unset, "cdn.s3.amazonaws.com", 443), "");
  EXPECT_EQ(RunConnectRefusal(rules, unset, "api.amazonaws.com", 22),
            "not among the hosts the run may reach");
  EXPECT_EQ(RunConnectRefusal(rules, unset, "api.example.com", 443),
            "not among the hosts the run may reach");
  // The operator's pattern for that very wildcard keeps all of it; a narrower one does not.
  std::string error;
  auto named = ParseEgressPatterns("*.amazonaws.com", &error);
  ASSERT_TRUE(named) << error;
  EXPECT_EQ(RunConnectRefusal(rules, named, "bucket.s3.amazonaws.com", 443), "");
  auto other = ParseEgressPatterns("*.example.com, api.amazonaws.com", &error);
  ASSERT_TRUE(other) << error;
  EXPECT_NE(RunConnectRefusal(rules, other, "bucket.s3.amazonaws.com", 443), "");
}

// The most a run description carries, and one more: counted after the operator's
// narrowing, hosts and ports for one host each on their own.
TEST(EgressRulesRefusal, RefusesMoreHostsOrPortsThanARunCanBeHeldTo) {
  std::vector<std::string> declared;
  for (size_t i = 0; i < kRunSpecMaxEgressRules; ++i)
    declared.push_back("h" + std::to_string(i) + ".example.com");
  const EgressPolicy unset{true, std::nullopt};
  EXPECT_EQ(EgressRulesRefusal(*RunEgressRules(unset, declared)), "");
  declared.push_back("one-more.example.com");
  const std::string hosts = EgressRulesRefusal(*RunEgressRules(unset, declared));
  EXPECT_NE(hosts.find("65 hosts"), std::string::npos) << hosts;
  EXPECT_NE(hosts.find("more than the 64"), std::string::npos) << hosts;
  EXPECT_NE(hosts.find("narrow them with SKILL_MCP_EGRESS_ALLOW"), std::string::npos) << hosts;
  EXPECT_NE(hosts.find("SKILL_MCP_NETWORK=on"), std::string::npos) << hosts;
  // The operator's patterns narrow the count back; address literals never count.
  std::string error;
  auto narrowed = ParseEgressPatterns("*.example.com", &error);
  ASSERT_TRUE(narrowed) << error;
  declared.back() = "one-more.example.org";
  EXPECT_EQ(EgressRulesRefusal(*RunEgressRules(EgressPolicy{true, narrowed}, declared)), "");
  declared.back() = "192.0.2.1";
  EXPECT_EQ(EgressRulesRefusal(*RunEgressRules(unset, declared)), "");

  // Ports: one pattern per port, all for one host.
  std::string allow;
  for (size_t p = 1; p <= kRunSpecMaxEgressPorts; ++p)
    allow += (p > 1 ? "," : "") + std::string("api.example.com:") + std::to_string(8000 + p);
  auto sixteen = ParseEgressPatterns(allow, &error);
  ASSERT_TRUE(sixteen) << error;
  const std::vector<std::string> api{"api.example.com"};
  auto rules = RunEgressRules(EgressPolicy{true, sixteen}, api);
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ((*rules)[0].ports.size(), kRunSpecMaxEgressPorts);
  EXPECT_EQ(EgressRulesRefusal(*rules), "");
  auto seventeen = ParseEgressPatterns(allow + ",api.example.com:9000", &error);
  ASSERT_TRUE(seventeen) << error;
  const std::string ports = EgressRulesRefusal(*RunEgressRules(EgressPolicy{true, seventeen}, api));
  EXPECT_NE(ports.find("17 ports of \"api.example.com\""), std::string::npos) << ports;
  EXPECT_NE(ports.find("more than the 16"), std::string::npos) << ports;
  EXPECT_NE(ports.find("SKILL_MCP_NETWORK=on"), std::string::npos) << ports;
  // The same patterns for a skill that declares another host: nothing of them applies.
  EXPECT_EQ(EgressRulesRefusal(*RunEgressRules(EgressPolicy{true, seventeen}, {"b.example.net"})),
            "");
}

}  // namespace
}  // namespace skillmcp
