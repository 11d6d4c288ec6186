#!/usr/bin/python3
"""Misbehaving clients for test-api-http.sh (plain sockets, no HTTP library).

  api-clients.py idle SOCKET N          open N connections, send nothing,
                                        print "OPEN N", hold until stdin closes
  api-clients.py slowloris SOCKET       send a request one byte per second;
                                        exit 0 and print "CLOSED AFTER n BYTES"
                                        when the server closes the connection
                                        before the request is complete, 1 if
                                        the server let it finish
  api-clients.py raw SOCKET HEXBYTES    send bytes, print the status line of
                                        the answer ("" when closed without one)
"""
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def idle(path, n):
    conns = [connect(path) for _ in range(n)]
    print("OPEN %d" % len(conns), flush=True)
    sys.stdin.read()  # hold them until the test closes our stdin
    for c in conns:
        c.close()


def slowloris(path):
    # A long, valid request that never completes within the server's
    # request timeout when sent at one byte per second.
    req = b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\n" + b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"
    s = connect(path)
    s.settimeout(0.0)
    sent = 0
    for b in req:
        try:
            # A server that closed shows up as EOF (or reset) on read.
            data = s.recv(4096)
            if data == b"":
                print("CLOSED AFTER %d BYTES" % sent, flush=True)
                return 0
            print("UNEXPECTED ANSWER %r" % data[:80], flush=True)
            return 1
        except BlockingIOError:
            pass
        except (ConnectionResetError, BrokenPipeError):
            print("CLOSED AFTER %d BYTES" % sent, flush=True)
            return 0
        try:
            s.send(bytes([b]))
        except (ConnectionResetError, BrokenPipeError):
            print("CLOSED AFTER %d BYTES" % sent, flush=True)
            return 0
        sent += 1
        time.sleep(1)  # the client's (mis)behaviour under test, not synchronisation
    print("NOT CLOSED: the whole request went through", flush=True)
    return 1


def raw(path, hexbytes):
    s = connect(path)
    s.settimeout(10)
    s.sendall(bytes.fromhex(hexbytes))
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    print(data.split(b"\r\n")[0].decode("latin-1") if data else "")
    return 0


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "idle":
        idle(path, int(sys.argv[3]))
        return 0
    if mode == "slowloris":
        return slowloris(path)
    if mode == "raw":
        return raw(path, sys.argv[3])
    return 2


if __name__ == "__main__":
    sys.exit(main())
