"""aria2p's notification listener (`API.listen_to_notifications`, over websocket-client with its default
Origin, `http://127.0.0.1:PORT`) against an aria2 JSON-RPC server: it must hear a download it adds start
and complete. Run by Tests/EndToEndTests/Aria2ClientTests.swift against haul's service and aria2c; prints
one JSON object of what it heard, and exits non-zero with one line when it hears nothing.

    python notifications.py --port P --secret-file F --url URL

The listener is aria2p's own; only `websocket.create_connection` is watched (called through, untouched)
to know when the listener is connected, so the download is added after it listens, not before.
"""

import argparse
import json
import sys
import threading

import aria2p
import websocket


def fail(message: str) -> None:
    print(f"notifications: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--url", required=True, help="a file to download (throttled, so it is seen running)")
    args = parser.parse_args()
    secret = open(args.secret_file).read().strip()

    connect = websocket.create_connection
    connected = threading.Event()
    refused: list = []

    def watched(*positional, **named):
        try:
            socket = connect(*positional, **named)
        except Exception as error:  # noqa: BLE001 - reported as the test's failure
            refused.append(f"{type(error).__name__}: {error}")
            connected.set()
            raise
        connected.set()
        return socket

    websocket.create_connection = watched

    api = aria2p.API(aria2p.Client(host="http://127.0.0.1", port=args.port, secret=secret))
    heard: dict = {"start": [], "complete": []}
    completed = threading.Event()

    def on_start(_api, gid):
        heard["start"].append(gid)

    def on_complete(_api, gid):
        heard["complete"].append(gid)
        completed.set()

    api.listen_to_notifications(threaded=True, on_download_start=on_start, on_download_complete=on_complete,
                                timeout=1, handle_signals=False)
    if not connected.wait(60):
        fail("aria2p's listener did not connect")
    if refused:
        api.stop_listening()
        fail(f"aria2p's listener was refused: {refused[0]}")

    download = api.add_uris([args.url], options={"out": "heard.bin"})
    while download.gid not in heard["complete"]:
        completed.clear()
        if download.gid in heard["complete"]:
            break
        if not completed.wait(240):
            api.stop_listening()
            fail(f"no onDownloadComplete for {download.gid}; heard {heard}")
    api.stop_listening()
    status = api.client.tell_status(download.gid, ["status", "files"])
    print(json.dumps({"gid": download.gid, "start": download.gid in heard["start"],
                      "complete": download.gid in heard["complete"], "status": status["status"],
                      "path": status["files"][0]["path"]}))


if __name__ == "__main__":
    main()
