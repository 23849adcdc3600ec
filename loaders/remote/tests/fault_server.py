"""An HTTP/1.1 server of one file that misbehaves on demand, for the remote client's tests.

    /usr/bin/python3 fault_server.py FILE [--log LOG.jsonl] [--until-stdin-closes]

Listens on 127.0.0.1, port 0; prints the port on stdout, then serves until killed (or, with
--until-stdin-closes, until its standard input ends: it goes with the test that started it,
however that ends). Every path
`/MODE/ANY/NAME` is FILE, served as MODE says (the name after MODE is not looked at, so that
`s3://MODE/KEY` with a path-style endpoint is FILE too; with virtual-hosted addressing MODE is
the first label of the Host header, `ok.localhost:PORT`):

    ok         correct: HEAD, 200 and the whole file, 206 for a range with Content-Range, an ETag
    short      Content-Length says more than the body holds, then the connection closes
    close      the connection closes after half of the body
    norange    Range ignored: 200 and the whole file
    etag       the ETag changes: the object is replaced once its header has been read
    stall      the status line and headers, then nothing (until the client goes, at most 60 s)
    loop       302 to itself
    forbidden  403 with an S3 XML error document

The header of a model is read first (a HEAD, then ranged GETs of at least 1 MiB starting in
the first MiB, and one of the last bytes: loaders/remote/source.cc), by the harness that
prepares the file and again by each worker. The faults short, close, norange, etag and stall
leave those requests alone and hit only the others (the strategies' own: a whole GET, ranges
that start past the first MiB), so that they trip in the run on a file of a few MiB; loop and
forbidden hit every request, so they trip while the header is read.

With --log, each request is appended to LOG as one JSON line: method, the raw path, the headers
(names as sent) and the mode.
"""
import argparse
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = {"ok", "short", "close", "norange", "etag", "stall", "loop", "forbidden"}
STALL_LIMIT_S = 60
HEADER_BYTES = 1 << 20
RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fault_server"

    def log_message(self, *args):  # quiet: the test reads the JSON log, not stderr
        pass

    def mode(self):
        first = self.path.lstrip("/").split("/", 1)[0]
        if first in MODES:
            return first
        host = self.headers.get("Host", "").split(".", 1)[0]
        return host if host in MODES else "ok"

    def record(self, mode):
        if self.server.log is None:
            return
        line = json.dumps({"method": self.command, "path": self.path,
                           "headers": [[k, v] for k, v in self.headers.items()], "mode": mode})
        with self.server.log_lock, open(self.server.log, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def do_HEAD(self):
        self.answer(body=False)

    def do_GET(self):
        self.answer(body=True)

    def answer(self, body):
        mode = self.mode()
        self.record(mode)
        data = self.server.data
        size = len(data)
        etag = self.server.etag
        if mode == "loop":
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "forbidden":
            doc = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                   b"<Message>Access Denied</Message><RequestId>0</RequestId></Error>")
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(doc)))
            self.end_headers()
            if body:
                self.wfile.write(doc)
            return
        first, last = 0, size - 1
        ranged = False
        m = RANGE.match(self.headers.get("Range", ""))
        if m:
            first = int(m.group(1))
            last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            if first >= size or last < first:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            ranged = True
        # The header's own requests: a HEAD, a range starting in the first MiB, one that ends
        # the file (its tail sentinel).
        header_read = not body or (ranged and (first < HEADER_BYTES or last == size - 1))
        if not header_read and mode == "norange":
            first, last, ranged = 0, size - 1, False
        if not header_read and mode == "etag":
            etag = self.server.etag_replaced
        length = last - first + 1
        self.send_response(206 if ranged else 200)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Content-Type", "application/octet-stream")
        if ranged:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if not body:
            return
        if header_read or mode in ("ok", "norange", "etag"):
            self.wfile.write(data[first:last + 1])
            return
        if mode == "stall":
            self.wfile.flush()
            self.stall()
        elif mode == "short":
            self.wfile.write(data[first:last + 1 - min(length, 4096)])
        elif mode == "close":
            self.wfile.write(data[first:first + length // 2])
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def stall(self):
        """Waits, sending nothing, until the client closes its end or STALL_LIMIT_S passes."""
        self.connection.settimeout(0.5)
        until = time.monotonic() + STALL_LIMIT_S
        while time.monotonic() < until:
            try:
                if self.connection.recv(4096) == b"":
                    return
            except socket.timeout:
                continue
            except OSError:
                return


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        """A client that went away mid-answer (the test's faults make it go) is not an error."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--log", default=None, help="append each request as a JSON line here")
    ap.add_argument("--until-stdin-closes", action="store_true",
                    help="also stop when standard input ends")
    args = ap.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    server = Server(("127.0.0.1", 0), Handler)
    server.data = data
    digest = hashlib.md5(data).hexdigest()
    server.etag = f'"{digest}"'
    server.etag_replaced = f'"{digest[::-1]}"'
    server.log = os.path.abspath(args.log) if args.log else None
    server.log_lock = threading.Lock()
    print(server.server_address[1], flush=True)
    if args.until_stdin_closes:
        def watch():
            sys.stdin.buffer.read()
            server.shutdown()
        threading.Thread(target=watch, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
