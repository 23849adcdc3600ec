"""An HTTP/1.1 server of one file that misbehaves on demand, for the remote client's tests.

    /usr/bin/python3 fault_server.py FILE [--other OTHER] [--log LOG.jsonl] [--until-stdin-closes]

Listens on 127.0.0.1, port 0; prints the port on stdout, then serves until killed (or, with
--until-stdin-closes, until its standard input ends: it goes with the test that started it,
however that ends). Every path
`/MODE/ANY/NAME` is FILE, served as MODE says (the name after MODE is not looked at, so that
`s3://MODE/KEY` with a path-style endpoint is FILE too; with virtual-hosted addressing MODE is
the first label of the Host header, `ok.localhost:PORT`):

    ok              correct: HEAD, 200 and the whole file, 206 for a range with Content-Range, an
                    ETag
    short           Content-Length says more than the body holds, then the connection closes
    close           the connection closes after half of the body
    norange         Range ignored: 200 and the whole file
    etag            the ETag changes: the object is replaced once its header has been read
    stall           the status line and headers, then nothing (until the client goes, at most 60 s)
    wrongrange      a 206 of the bytes 4 KiB before the range asked, its Content-Range saying so
    nocontentrange  a 206 of the bytes asked, without Content-Range
    unavailable     503 every time
    loop            302 to itself
    forbidden       403 with an S3 XML error document
    noetag          no ETag on any answer
    getnoetag       an ETag on a HEAD's answer, none on a GET's
    slowdown        503 SlowDown (S3's XML error, Retry-After: 1) the first time each request (its
                    method and Range) is made, then the answer of ok
    swap            FILE to the first two HEADs and the requests after them (the runner's two
                    reads of the header: its check of the given file, then its preparation),
                    then, from the third HEAD (the first reader's) on, OTHER (--other: another
                    file of the same size) with an ETag of its own: the object replaced between
                    the runner's read of it and the readers'
    late            an answer to a GET only after 1 s (a HEAD at once)

The header of a model is read first (a HEAD, then ranged GETs of at least 1 MiB starting in
the first MiB, and one of the last bytes: loaders/remote/source.cc), by the harness that
prepares the file and again by each worker. The faults listed before loop leave those requests
alone and hit only the others (the strategies' own: a whole GET, ranges that start past the
first MiB), so that they trip in the run on a file of a few MiB; loop and those after it hit
every request.

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

LOAD_ONLY = {"short", "close", "norange", "etag", "stall", "wrongrange", "nocontentrange",
             "unavailable"}
MODES = {"ok", "loop", "forbidden", "noetag", "getnoetag", "slowdown", "late",
         "swap"} | LOAD_ONLY
STALL_LIMIT_S = 60
LATE_S = 1.0
SHIFT = 4096  # wrongrange: how far before the range asked its bytes start
HEADER_BYTES = 1 << 20
RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


def s3_error(code, message):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><RequestId>0</RequestId></Error>").encode()


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
        with self.server.lock, open(self.server.log, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def do_HEAD(self):
        self.answer(body=False)

    def do_GET(self):
        self.answer(body=True)

    def send_error_answer(self, status, body, doc=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if doc:
            self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(doc)))
        self.end_headers()
        if body:
            self.wfile.write(doc)

    def first_time(self, mode):
        """Whether this request (its mode, method and Range) is made for the first time."""
        key = (mode, self.command, self.headers.get("Range", ""))
        with self.server.lock:
            new = key not in self.server.seen
            self.server.seen.add(key)
        return new

    def file_for(self, mode):
        """The bytes and ETag this request is answered with (swap: OTHER from the third
        HEAD on)."""
        if mode == "swap":
            with self.server.lock:
                self.server.swap_heads += self.command == "HEAD"
                if self.server.swap_heads >= 3:
                    return self.server.other, self.server.other_etag
        return self.server.data, self.server.etag

    def refused(self, mode, body, header_read):
        """Answers the modes that send no part of the file; True when it did."""
        if mode == "loop":
            self.send_error_answer(302, body, headers=[("Location", self.path)])
        elif mode == "forbidden":
            self.send_error_answer(403, body, s3_error("AccessDenied", "Access Denied"))
        elif mode == "unavailable" and not header_read:
            self.send_error_answer(503, body, s3_error("ServiceUnavailable", "Unavailable"))
        elif mode == "slowdown" and self.first_time(mode):
            self.send_error_answer(503, body,
                                   s3_error("SlowDown", "Please reduce your request rate."),
                                   [("Retry-After", "1")])
        else:
            return False
        return True

    def asked(self, size):
        """(first, last, ranged) of the Range asked for; None after answering 416."""
        m = RANGE.match(self.headers.get("Range", ""))
        if not m:
            return 0, size - 1, False
        first = int(m.group(1))
        last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
        if first >= size or last < first:
            self.send_error_answer(416, False, headers=[("Content-Range", f"bytes */{size}")])
            return None
        return first, last, True

    def answer(self, body):
        mode = self.mode()
        self.record(mode)
        data, etag = self.file_for(mode)
        size = len(data)
        m = RANGE.match(self.headers.get("Range", ""))
        # The header's own requests: a HEAD, a range starting in the first MiB, one that ends
        # the file (its tail sentinel).
        header_read = not body or (m is not None and (
            int(m.group(1)) < HEADER_BYTES or not m.group(2) or int(m.group(2)) >= size - 1))
        if self.refused(mode, body, header_read):
            return
        asked = self.asked(size)
        if asked is None:
            return
        first, last, ranged = asked
        fault = None if header_read or mode not in LOAD_ONLY else mode
        if fault == "norange":
            first, last, ranged = 0, size - 1, False
        if fault == "wrongrange" and ranged:
            first, last = first - SHIFT, last - SHIFT
        if fault == "etag":
            etag = self.server.etag_replaced
        if mode == "late" and body:
            time.sleep(LATE_S)
        self.send_head(mode, etag, size, first, last, ranged, fault != "nocontentrange")
        if body:
            self.send_body(fault, data, first, last)

    def send_head(self, mode, etag, size, first, last, ranged, content_range):
        self.send_response(206 if ranged else 200)
        self.send_header("Accept-Ranges", "bytes")
        if mode != "noetag" and not (mode == "getnoetag" and self.command == "GET"):
            self.send_header("ETag", etag)
        self.send_header("Content-Type", "application/octet-stream")
        if ranged and content_range:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()

    def send_body(self, fault, data, first, last):
        length = last - first + 1
        if fault not in ("stall", "short", "close"):
            self.wfile.write(data[first:last + 1])
            return
        if fault == "stall":
            self.wfile.flush()
            self.stall()
        elif fault == "short":
            self.wfile.write(data[first:last + 1 - min(length, 4096)])
        elif fault == "close":
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


def etag_of(data):
    return f'"{hashlib.md5(data).hexdigest()}"'


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--other", default=None, help="what swap serves after the second HEAD")
    ap.add_argument("--log", default=None, help="append each request as a JSON line here")
    ap.add_argument("--until-stdin-closes", action="store_true",
                    help="also stop when standard input ends")
    args = ap.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    server = Server(("127.0.0.1", 0), Handler)
    server.data = data
    server.etag = etag_of(data)
    server.etag_replaced = f'"{server.etag[1:-1][::-1]}"'
    server.other = data
    if args.other:
        with open(args.other, "rb") as f:
            server.other = f.read()
    server.other_etag = etag_of(server.other)
    server.log = os.path.abspath(args.log) if args.log else None
    server.lock = threading.Lock()
    server.seen = set()
    server.swap_heads = 0
    print(server.server_address[1], flush=True)
    if args.until_stdin_closes:
        def watch():
            sys.stdin.buffer.read()
            server.shutdown()
        threading.Thread(target=watch, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
