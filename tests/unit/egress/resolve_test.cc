#include "egress/resolve.h"

#include <gtest/gtest.h>

namespace skillmcp::egress {
namespace {

// why absolute: the host's resolv.conf search list and ndots would otherwise try
// `vault.svc.cluster.local` (a name the run never declared) before `vault`.
TEST(EgressResolveTest, TheNameAskedForIsAbsolute) {
  EXPECT_EQ(QueryName("vault"), "vault.");
  EXPECT_EQ(QueryName("api.example.com"), "api.example.com.");
  EXPECT_EQ(QueryName("api.example.com."), "api.example.com.") << "never two dots";
}

}  // namespace
}  // namespace skillmcp::egress
