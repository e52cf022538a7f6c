"""Drives an aria2 JSON-RPC server (haul's service, or aria2c itself) with real, unmodified clients from
PyPI: aria2p's Python API and its command line, and aioaria2 over WebSocket. Run by
Tests/EndToEndTests/Aria2ClientTests.swift against both; prints one JSON object of what it saw, and exits
non-zero with one line on the first thing that is not as aria2 does it.

    python scenario.py --port P --secret-file F --base URL --subdir DIR --cli PATH
"""

import argparse
import asyncio
import json
import subprocess
import sys
import time

import aioaria2
import aria2p


def fail(message: str) -> None:
    print(f"scenario: {message}", file=sys.stderr)
    sys.exit(1)


def wait(what: str, condition, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def status(api: aria2p.API, gid: str) -> dict:
    return api.client.tell_status(gid, ["gid", "status", "completedLength", "totalLength", "files", "errorMessage"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--base", required=True, help="the sample server's download URL, up to the file name")
    parser.add_argument("--subdir", required=True, help="a dir the server may write (the dir option)")
    parser.add_argument("--cli", required=True, help="aria2p's command")
    args = parser.parse_args()
    secret = open(args.secret_file).read().strip()
    seen: dict = {}

    # aria2p, the Python API.
    api = aria2p.API(aria2p.Client(host="http://127.0.0.1", port=args.port, secret=secret))
    plain = api.add_uris([args.base + "small.bin"])
    named = api.add_uris([args.base + "small.bin"], options={"dir": args.subdir, "out": "renamed.bin"})
    throttled = api.add_uris([args.base + "medium.bin"])
    for download in (plain, named, throttled):
        if len(download.gid) != 16 or any(c not in "0123456789abcdef" for c in download.gid):
            fail(f"GID {download.gid!r} is not 16 hex digits")

    # Pause and unpause the throttled one mid-file: it must resume, not restart.
    wait("the throttled download to be under way", lambda: int(status(api, throttled.gid)["completedLength"]) > 1 << 20)
    if not api.pause([api.get_download(throttled.gid)])[0]:
        fail("pause was refused")
    wait("the pause", lambda: status(api, throttled.gid)["status"] == "paused")
    paused_at = int(status(api, throttled.gid)["completedLength"])
    waiting = [d["gid"] for d in api.client.tell_waiting(0, 100, ["gid"])]
    if throttled.gid not in waiting:
        fail(f"a paused download is in tellWaiting, as aria2 lists it; got {waiting}")
    if not api.resume([api.get_download(throttled.gid)])[0]:
        fail("unpause was refused")
    seen["pausedAt"] = paused_at

    for download in (plain, named, throttled):
        wait(f"{download.gid} to complete", lambda g=download.gid: status(api, g)["status"] == "complete")
    seen["files"] = {
        "plain": status(api, plain.gid)["files"][0]["path"],
        "named": status(api, named.gid)["files"][0]["path"],
        "throttled": status(api, throttled.gid)["files"][0]["path"],
    }
    stopped = [d["gid"] for d in api.client.tell_stopped(0, 100, ["gid"])]
    if not {plain.gid, named.gid, throttled.gid} <= set(stopped):
        fail(f"tellStopped lists the completed ones; got {stopped}")

    # Remove one while it runs.
    doomed = api.add_uris([args.base + "medium.bin"], options={"out": "removed.bin"})
    wait("the one to remove to be active", lambda: status(api, doomed.gid)["status"] == "active")
    api.remove([api.get_download(doomed.gid)], force=True)
    wait("the removal", lambda: doomed.gid not in [d.gid for d in api.get_downloads() if d.status == "active"])
    seen["removed"] = doomed.gid

    # Global options, changed and read back.
    api.set_global_options({"max-overall-download-limit": "1M", "max-concurrent-downloads": "3"})
    options = api.get_global_options()
    seen["globalOptions"] = {"max-overall-download-limit": options.get("max-overall-download-limit"),
                             "max-concurrent-downloads": options.get("max-concurrent-downloads")}
    api.set_global_options({"max-overall-download-limit": "0", "max-concurrent-downloads": "5"})

    # system.multicall, each call with its own token.
    results = api.client.multicall([{"methodName": "aria2.getVersion", "params": []},
                                    {"methodName": "aria2.getGlobalStat", "params": []}])
    if len(results) != 2 or "version" not in results[0][0] or "numActive" not in results[1][0]:
        fail(f"multicall answered {results}")
    seen["multicall"] = True

    # A wrong secret.
    try:
        aria2p.Client(host="http://127.0.0.1", port=args.port, secret="wrong").get_global_stat()
        fail("a wrong secret was accepted")
    except aria2p.ClientException as error:
        seen["wrongSecret"] = {"code": error.code, "message": error.message}

    # aria2p's command line.
    cli = [args.cli, "--host", "http://127.0.0.1", "--port", str(args.port), "--secret", secret]
    added = subprocess.run(cli + ["add", args.base + "small.bin"], capture_output=True, text=True)
    if added.returncode != 0:
        fail(f"aria2p add: {added.stdout} {added.stderr}")
    cli_gid = added.stdout.split()[-1].strip()
    wait("the command line's download", lambda: status(api, cli_gid)["status"] == "complete")
    shown = subprocess.run(cli + ["show"], capture_output=True, text=True)
    if cli_gid not in shown.stdout:
        fail(f"aria2p show lacks {cli_gid}: {shown.stdout}")
    seen["cli"] = status(api, cli_gid)["files"][0]["path"]

    # aioaria2 over WebSocket: the notifications for a download it adds.
    async def websocket() -> dict:
        client = await aioaria2.Aria2WebsocketClient.new(f"ws://127.0.0.1:{args.port}/jsonrpc", token=secret)
        events: dict = {}
        started, completed = asyncio.Event(), asyncio.Event()

        @client.onDownloadStart
        async def on_start(trigger, data):
            events.setdefault("start", []).append(data["params"][0]["gid"])
            started.set()

        @client.onDownloadComplete
        async def on_complete(trigger, data):
            events.setdefault("complete", []).append(data["params"][0]["gid"])
            completed.set()

        gid = await client.addUri([args.base + "small.bin"], {"out": "ws.bin"})
        while gid not in events.get("complete", []):
            completed.clear()
            await asyncio.wait_for(completed.wait(), 240)
        state = await client.tellStatus(gid, ["status", "files"])
        await client.close()
        return {"gid": gid, "start": gid in events.get("start", []), "complete": True,
                "status": state["status"], "path": state["files"][0]["path"]}

    seen["websocket"] = asyncio.run(websocket())
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
