#!/usr/bin/python3
# A gRPC client that plays the CO (kubelet, Nomad): one CSI call, the way
# they make it. The stubs are compiled from agent/csi/csi.proto at test
# time with grpc_tools (lib-csi.sh puts them in $CSI_PY), so client and
# plugin share nothing but the .proto and the wire.
#
#   csi-call.py SOCKET METHOD [REQUEST-JSON] [--timeout S]
#
# METHOD is Service/Rpc (Identity/Probe, Node/NodePublishVolume...), or a
# full path (/csi.v1.Controller/CreateVolume) for an empty raw call. The
# answer is printed as one JSON line: the response message (proto3 JSON
# mapping, default values included) and exit 0, or
# {"code": "NOT_FOUND", "message": "..."} and exit 1.
import json
import os
import sys

sys.path.insert(0, os.environ["CSI_PY"])
import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402

import csi_pb2  # noqa: E402
import csi_pb2_grpc  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--timeout")]
timeout = 130.0
for a in sys.argv[1:]:
    if a.startswith("--timeout="):
        timeout = float(a.split("=", 1)[1])
sock, method = args[0], args[1]
body = args[2] if len(args) > 2 else "{}"
if method.startswith("/"):
    # A method the stubs do not have (the Controller service...): raw bytes.
    try:
        grpc.insecure_channel("unix://" + sock).unary_unary(method)(b"", timeout=timeout)
    except grpc.RpcError as e:
        print(json.dumps({"code": e.code().name, "message": e.details()}))
        sys.exit(1)
    print("{}")
    sys.exit(0)
service, rpc = method.split("/")
stub = getattr(csi_pb2_grpc, service + "Stub")(grpc.insecure_channel("unix://" + sock))
call = getattr(stub, rpc)
req_type = csi_pb2.DESCRIPTOR.services_by_name[service].methods_by_name[rpc].input_type
request = json_format.Parse(body, getattr(csi_pb2, req_type.name)())
try:
    reply = call(request, timeout=timeout)
except grpc.RpcError as e:
    print(json.dumps({"code": e.code().name, "message": e.details()}))
    sys.exit(1)
print(json.dumps(json_format.MessageToDict(reply, including_default_value_fields=True,
                                           preserving_proto_field_name=True)))
