#!/usr/bin/env python3
"""mint.yaml and server.json against the code: the version of both equals meson's
project version and the binary's --version; the tool roster of both equals what a live
server answers to tools/list; server.json is stdio, and mint.yaml proposes no runtime
and an empty egress allowlist (SPEC section 9).

usage: manifests.py SOURCE_ROOT BUILD_DIR SKILL_MCP_BIN
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed (tests/deploy/prepare-host.sh installs it)")
    sys.exit(77)

source, build, binary = sys.argv[1:4]
failures = 0


def check(ok, what, detail=""):
    global failures
    print(f"{'ok' if ok else 'not ok'} - {what}" + ("" if ok or not detail else f": {detail}"))
    if not ok:
        failures += 1


def live_tools():
    """tools/list from the built server over raw stdio JSON-RPC, in a fresh empty
    skills directory and a written-out environment."""
    with tempfile.TemporaryDirectory() as skills:
        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "manifests-test", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]
        stdin = "".join(json.dumps(m) + "\n" for m in lines)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SKILLS_DIR": skills, "LANG": "C.UTF-8"}
        out = subprocess.run([binary], input=stdin, capture_output=True, text=True, env=env,
                             timeout=30).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("id") == 2:
            return [t["name"] for t in msg["result"]["tools"]]
    raise RuntimeError(f"no tools/list answer in: {out[:500]}")


project = json.loads(subprocess.run(["meson", "introspect", "--projectinfo", build],
                                    capture_output=True, text=True, check=True).stdout)
meson_version = project["version"]
binary_version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                check=True).stdout.split()[-1]
check(meson_version == binary_version, f"skill-mcp --version ({binary_version}) is meson's {meson_version}")
tools = live_tools()
print(f"# live tools/list: {tools}")

with open(os.path.join(source, "mint.yaml"), encoding="utf-8") as f:
    mint = yaml.safe_load(f)
with open(os.path.join(source, "server.json"), encoding="utf-8") as f:
    server = json.load(f)

check(mint.get("version") == meson_version, f"mint.yaml version {mint.get('version')} is {meson_version}")
check(mint.get("tools") == tools, "mint.yaml tools are the live tools/list", f"{mint.get('tools')} vs {tools}")
check(mint.get("egress") == {"allow": []}, "mint.yaml proposes egress allow: [] and nothing else", str(mint.get("egress")))
for key in ("runtime", "tier", "state", "skills"):
    check(key not in mint, f"mint.yaml does not propose {key}")

check(server.get("version") == meson_version, f"server.json version {server.get('version')} is {meson_version}")
check(str(server.get("name", "")).startswith("io.github.") and server["name"].endswith("/skill-mcp"),
      "server.json name is io.github.<owner>/skill-mcp", server.get("name"))
packages = server.get("packages", [])
check(len(packages) > 0, "server.json names a package")
for p in packages:
    check(p.get("transport", {}).get("type") == "stdio", f"package {p.get('identifier')} is stdio")
    check(str(p.get("identifier", "")).endswith(":" + meson_version),
          f"package {p.get('identifier')} is tagged {meson_version}")
    names = [e.get("name") for e in p.get("environmentVariables", [])]
    check("MCP_SKILLS_PATH" in names and "MCP_SKILL_RUN" in names,
          "server.json describes MCP_SKILLS_PATH and MCP_SKILL_RUN", str(names))
    secrets = {e["name"] for e in p.get("environmentVariables", []) if e.get("isSecret")}
    check(secrets == {"MCP_CONFIRM_SECRET"}, "only MCP_CONFIRM_SECRET is marked secret", str(secrets))
meta = server.get("_meta", {}).get("io.modelcontextprotocol.registry/publisher-provided", {})
check(meta.get("tools") == tools, "server.json tools are the live tools/list", f"{meta.get('tools')} vs {tools}")
check(meta.get("nonExecutableTools") == [t for t in tools if t != "skill_run"],
      "server.json's non-executable set is every tool but skill_run", str(meta.get("nonExecutableTools")))

print("PASS" if failures == 0 else f"FAIL: {failures} check(s) failed")
sys.exit(0 if failures == 0 else 1)
