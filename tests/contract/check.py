"""The REST contract, checked by real clients against a running daemon (KENNEL_BIN).

1. GET /api/openapi.json must be a valid OpenAPI 3.1 document (openapi-spec-validator).
2. schemathesis, with every check, over every operation: 0 failures. Its stateful phase
   follows the document's links from what it creates to operations on it, and the daemon has
   a provider (the fake LLM), so messages run real turns.

Run by tests/contract/run (which ./scripts/test calls). Environment:
  KENNEL_BIN             the binary (default target/release/kennel)
  FAKE_LLM_BIN           the fake provider (default target/debug/fake-llm)
  CONTRACT_EXAMPLES      examples per operation and phase (default 40)
  CONTRACT_SEED          schemathesis seed (default fixed, so CI runs are reproducible;
                         `random` for a new one each run)
  CONTRACT_SECONDS       the time budget (default 120: fuzzing and stateful testing repeat
                         until it is spent)
"""

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.request

from openapi_spec_validator import validate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("KENNEL_BIN", os.path.join(ROOT, "target", "release", "kennel"))
FAKE_LLM = os.environ.get("FAKE_LLM_BIN", os.path.join(ROOT, "target", "debug", "fake-llm"))
EXAMPLES = os.environ.get("CONTRACT_EXAMPLES", "40")
SEED = os.environ.get("CONTRACT_SEED", "20261201")
# Fuzzing and stateful testing repeat until this many seconds are spent.
MAX_TIME = os.environ.get("CONTRACT_SECONDS", "120")


LOG = os.path.join(ROOT, "target", "contract-daemon.log")


def start(home, llm):
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f'[providers.fake]\nkind = "openai"\nbase_url = "{llm}/v1"\napi_key_env = ""\n')
    token = subprocess.run([BIN, "--home", home, "token", "create", "contract"],
                           check=True, capture_output=True, text=True).stdout.strip()
    # The daemon's warnings and errors (an internal error's detail, under its ref) go to LOG.
    daemon = subprocess.Popen([BIN, "--home", home, "start", "--bind", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=open(LOG, "w"), text=True,
                              env={**os.environ, "RUST_LOG": "warn"})
    line = daemon.stdout.readline()
    match = re.match(r"kennel listening on (\S+)", line)
    if not match:
        daemon.kill()
        sys.exit(f"the daemon did not start: {line!r}")
    return daemon, match.group(1), token


def fake_llm():
    """The fake LLM provider (tests/src/bin/fake-llm.rs) answering every model call, so
    messages to agents run real turns instead of meeting "no provider"."""
    fake = subprocess.Popen([FAKE_LLM, "--bind", "127.0.0.1:0", "--reply", "noted"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = fake.stdout.readline()
    match = re.match(r"fake-llm listening on (\S+)", line)
    if not match:
        fake.kill()
        sys.exit(f"the fake LLM did not start: {line!r}")
    return fake, match.group(1)


def main():
    with tempfile.TemporaryDirectory() as home:
        fake, llm = fake_llm()
        daemon, base, token = start(home, llm)
        try:
            doc = json.loads(urllib.request.urlopen(urllib.request.Request(
                base + "/api/openapi.json", headers={"Authorization": f"Bearer {token}"})).read())
            validate(doc)
            print(f"GET /api/openapi.json: a valid OpenAPI {doc['openapi']} document, "
                  f"{sum(len(v) for v in doc['paths'].values())} operations")
            settings = os.path.join(HERE, "schemathesis.toml")
            seed_value = str(secrets.randbelow(2**63)) if SEED == "random" else SEED
            started = time.monotonic()
            result = subprocess.run([
                os.path.join(os.path.dirname(sys.executable), "schemathesis"), "--config-file", settings,
                "run", base + "/api/openapi.json", "-H", f"Authorization: Bearer {token}",
                # Every check runs: schemathesis's default. (`--checks all` here would also
                # override the one exclusion schemathesis.toml makes, with its reason.)
                "--max-examples", EXAMPLES, "--seed", seed_value,
                "--max-time", MAX_TIME, "--warnings", "off", "--no-color",
            ], cwd=home)  # its cache goes to the temporary home, not the repository
            print(f"schemathesis (seed {seed_value}) took {time.monotonic() - started:.0f} s")
            if result.returncode != 0:
                with open(LOG) as f:
                    errors = [line for line in f if "ERROR" in line]
                print(f"the daemon's errors ({LOG}):\n" + "".join(errors[-20:]))
            sys.exit(result.returncode)
        finally:
            daemon.terminate()
            daemon.wait(timeout=20)
            fake.kill()


if __name__ == "__main__":
    main()
