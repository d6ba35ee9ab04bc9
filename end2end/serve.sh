#!/usr/bin/env bash
# Starts what the end-to-end specs run against: the fake LLM provider on :4601 and the real
# kennel binary on :4600 (KENNEL_BIN: the release build by default; ./scripts/test passes the
# debug build its tests ran), on a fresh temporary home. Stops both when it is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
kennel=${KENNEL_BIN:-target/release/kennel}
fake=${FAKE_LLM_BIN:-target/debug/fake-llm}
home=$(mktemp -d)
"$fake" --bind 127.0.0.1:4601 &
fake_pid=$!
trap 'kill $fake_pid 2>/dev/null; rm -rf "$home"' EXIT
cat > "$home/config.toml" <<TOML
[providers.fake]
kind = "openai"
base_url = "http://127.0.0.1:4601/v1"
api_key_env = ""
[browser]
executable = "${CHROMIUM:-/usr/bin/chromium}"
# The specs' agents browse the daemon's own sign-in page: loopback opened on its port only.
allowed_hosts = ["127.0.0.1:4600"]
# An inbound-only webhook channel the specs post signed messages to (replies have nowhere to
# go: the page shows them as failed sends).
[channels.lobby]
kind = "webhook"
agent = "courier"
signing_secret_env = "KENNEL_E2E_CHANNEL_SECRET"
base_url = "http://127.0.0.1:4601/lobby-replies"
# The MCP project's reference server (tests/peers, installed by ./scripts/test), for /mcp.
[mcp.servers.everything]
command = "node"
args = ["$PWD/tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
TOML
KENNEL_E2E_CHANNEL_SECRET=e2e-channel-secret RUST_LOG=${RUST_LOG:-warn} "$kennel" --home "$home" start --bind 127.0.0.1:4600 &
wait $!
