#!/usr/bin/python3
# A NOTIFY_SOCKET listener, as systemd would be: binds a datagram socket at
# argv[1] and appends every message it receives to argv[2], one per line
# (newlines inside a message become spaces). Runs until killed.
import os
import socket
import sys

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(out, "a", buffering=1) as f:
    while True:
        data = s.recv(65536).decode(errors="replace")
        f.write(data.replace("\n", " ") + "\n")
