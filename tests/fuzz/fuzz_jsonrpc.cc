// Fuzzes the MCP front door: framing, JSON-RPC classification and the dispatcher, by
// feeding the input as the client's stdin to a real Session + McpServer over pipes.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

#include "broker/grants/grants.h"
#include "broker/mcp/server.h"
#include "broker/mcp/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace skillmcp;
  if (size > 60000) return 0;  // stay under one pipe buffer
  int in[2], out;
  if (pipe2(in, O_CLOEXEC) != 0) return 0;
  out = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (write(in[1], data, size) != static_cast<ssize_t>(size)) abort();
  close(in[1]);
  static Catalogue catalogue;
  static GrantDecision grants = DecideGrants(catalogue, std::nullopt, false);
  {
    EventLoop loop;
    Session session(loop, in[0], out);
    McpServer server(session, CatalogueView{&catalogue, &grants}, "fuzz", nullptr);
    server.Register();
    session.OnClosed([&loop] { loop.Stop(); });
    session.Start();
    for (int i = 0; i < 1000 && !loop.stopped(); ++i) loop.RunOnce(0);
  }
  close(in[0]);
  close(out);
  return 0;
}
