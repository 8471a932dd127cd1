"""The official Model Context Protocol client (PyPI `mcp`, the Python SDK) for the `vx mcp`
tests: it starts `VX mcp ARGS…` over stdio in DIR, as an agent's host does (`VX ARGS…` when
ARGS start with `-C` or `mcp`: a setup snippet's own words).

    python3 mcp_client.py VX DIR [ARGS…] < steps.json > results.json

Steps, in order; each gives one entry of `results`:

  {"op": "tools"}                                   the tools listed: [{name, read_only}]
  {"op": "call", "tool": T, "arguments": {...}}     {"is_error", "text", "json" (when JSON)}
  {"op": "until", "tool": T, "arguments": {...}, "path": [k…], "equals": V, "timeout": S}
      calls T every 50 ms until the JSON answer's value at `path` equals V (or, with
      "contains": S instead, is a text holding S); the answers seen,
      in order (consecutive equal answers once)
  {"op": "touch", "path": P}                        creates the file P (relative to DIR)
"""

import asyncio
import json
import sys
import time

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


def answer(result) -> dict:
    text = "".join(getattr(block, "text", "") for block in result.content)
    out = {"is_error": bool(result.is_error), "text": text}
    try:
        out["json"] = json.loads(text)
    except ValueError:
        pass
    return out


def at(value, path):
    for key in path:
        if isinstance(value, list):
            value = value[key] if isinstance(key, int) and key < len(value) else None
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


async def main() -> None:
    vx, cwd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    steps = json.load(sys.stdin)
    results = []
    if not args or args[0] not in ("mcp", "-C"):
        args = ["mcp", *args]
    server = StdioServerParameters(command=vx, args=args, cwd=cwd)
    async with Client(server) as client:
        for step in steps:
            if step["op"] == "tools":
                listed = await client.list_tools()
                results.append(
                    [
                        {
                            "name": t.name,
                            "read_only": bool(t.annotations and t.annotations.read_only_hint),
                            "schema": t.input_schema,
                        }
                        for t in listed.tools
                    ]
                )
            elif step["op"] == "call":
                results.append(answer(await client.call_tool(step["tool"], step.get("arguments", {}))))
            elif step["op"] == "until":
                seen = []
                deadline = time.monotonic() + step.get("timeout", 60)
                while True:
                    got = answer(await client.call_tool(step["tool"], step.get("arguments", {})))
                    if not seen or seen[-1] != got:
                        seen.append(got)
                    value = at(got.get("json"), step["path"])
                    if value == step.get("equals", object()) or (
                        "contains" in step and isinstance(value, str) and step["contains"] in value
                    ):
                        break
                    if time.monotonic() > deadline:
                        raise SystemExit(f"timed out waiting: {json.dumps(seen[-1])}")
                    await asyncio.sleep(0.05)
                results.append(seen)
            elif step["op"] == "touch":
                with open(f"{cwd}/{step['path']}", "w"):
                    pass
                results.append(None)
            else:
                raise SystemExit(f"unknown step {step['op']}")
    print(json.dumps({"results": results}))


asyncio.run(main())
