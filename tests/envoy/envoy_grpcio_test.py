#!/usr/bin/python3
"""Envoy's rate limit service API through Python's grpcio (Debian's python3-grpcio), with stubs
generated here by protoc and grpc_python_plugin from the project's Envoy-shaped protos: the
same messages a client generated from Envoy's own files sends (package, names, field numbers).
One rl-server for the whole script. Exit 77 (skip) when grpcio or the generators are missing."""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None
SERVER = None
PORT = None
rls = None
rls_grpc = None
rl_common = None


def generate_stubs(out_dir):
    protos = ["envoy/config/core/v3/base.proto", "envoy/type/v3/ratelimit_unit.proto",
              "envoy/extensions/common/ratelimit/v3/ratelimit.proto",
              "envoy/service/ratelimit/v3/rls.proto"]
    subprocess.run([ARGS.protoc, "-I", ARGS.protos, "-I", "/usr/include",
                    "--python_out=" + out_dir, "--grpc_out=" + out_dir,
                    "--plugin=protoc-gen-grpc=" + ARGS.plugin] + protos, check=True)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(rules_dir):
    # A port free a moment ago; another process may take it first, so a failed start is retried.
    for _ in range(3):
        try:
            return start_server_once(rules_dir, free_port())
        except RuntimeError:
            pass
    raise RuntimeError("rl-server did not start")


def start_server_once(rules_dir, port):
    proc = subprocess.Popen([ARGS.server, "--quiet", "--port", "0", "--envoy-port", str(port),
                             "--envoy-rules", rules_dir, "--envoy-headers", "yes"],
                            stdout=subprocess.PIPE, text=True)
    envoy_port = None
    deadline = time.time() + 20
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("rl-server envoy: listening on "):
            envoy_port = int(line.rsplit(":", 1)[1])
        if line.startswith("rl-server ready: "):
            return proc, envoy_port
    proc.kill()
    proc.wait()
    raise RuntimeError("rl-server did not start")


def request(domain, descriptors, hits_addend=0):
    req = rls.RateLimitRequest(domain=domain, hits_addend=hits_addend)
    for entries in descriptors:
        d = req.descriptors.add()
        for k, v in entries:
            d.entries.add(key=k, value=v)
    return req


class EnvoyGrpcioTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import grpc
        cls.grpc = grpc
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % PORT)
        cls.stub = rls_grpc.RateLimitServiceStub(cls.channel)

    def call(self, req):
        return self.stub.ShouldRateLimit(req, timeout=5)

    def test_limit_and_fields(self):
        Code = rls.RateLimitResponse.Code
        for i in range(1, 7):
            resp = self.call(request("rl_test", [[("remote_address", "py-1")]]))
            s = resp.statuses[0]
            self.assertEqual(s.current_limit.requests_per_unit, 5)
            self.assertEqual(s.current_limit.unit, rls.RateLimitResponse.RateLimit.HOUR)
            self.assertTrue(0 < s.duration_until_reset.ToMilliseconds() <= 3600000)
            if i <= 5:
                self.assertEqual(resp.overall_code, Code.OK)
                self.assertEqual(s.limit_remaining, 5 - i)
            else:
                self.assertEqual(resp.overall_code, Code.OVER_LIMIT)
                self.assertEqual(s.code, Code.OVER_LIMIT)

    def test_minute_window_is_the_clocks_minute(self):
        before = time.time()
        resp = self.call(request("rl_test", [[("per_minute", "py-align")]]))
        after = time.time()
        reset_ms = resp.statuses[0].duration_until_reset.ToMilliseconds()
        # The window ends at the next whole minute of the Unix clock.
        lo = 60000 - (after % 60) * 1000 - 50
        hi = 60000 - (before % 60) * 1000 + 50
        if lo < 0:  # the minute turned between the two readings
            return
        self.assertTrue(lo <= reset_ms <= hi, (lo, reset_ms, hi))

    def test_nested_wildcard_unlimited(self):
        gold = self.call(request("rl_test", [[("tenant", "py"), ("plan", "gold")]]))
        self.assertEqual(gold.statuses[0].current_limit.requests_per_unit, 10)
        wild = self.call(request("rl_test", [[("path", "/api/py")]]))
        self.assertEqual(wild.statuses[0].current_limit.requests_per_unit, 4)
        free = self.call(request("rl_test", [[("free", "py")]]))
        self.assertEqual(free.statuses[0].limit_remaining, 2**32 - 1)

    def test_hits_addend_both_levels_and_override(self):
        req = request("rl_test", [[("remote_address", "py-h1")], [("remote_address", "py-h2")]],
                      hits_addend=2)
        req.descriptors[1].hits_addend.value = 4
        resp = self.call(req)
        self.assertEqual([s.limit_remaining for s in resp.statuses], [3, 1])
        req = request("rl_test", [[("unconfigured", "py-o")]])
        req.descriptors[0].limit.requests_per_unit = 1
        req.descriptors[0].limit.unit = rl_common_unit().DAY
        self.assertEqual(self.call(req).overall_code, rls.RateLimitResponse.Code.OK)
        self.assertEqual(self.call(req).overall_code, rls.RateLimitResponse.Code.OVER_LIMIT)

    def test_shadow_and_replaces(self):
        Code = rls.RateLimitResponse.Code
        self.call(request("rl_test", [[("watch", "py")]]))
        self.assertEqual(self.call(request("rl_test", [[("watch", "py")]])).overall_code, Code.OK)
        for _ in range(3):
            resp = self.call(request("rl_test", [[("base", "py")], [("premium", "py")]]))
            self.assertEqual(resp.overall_code, Code.OK)

    def test_headers(self):
        resp = self.call(request("rl_test", [[("remote_address", "py-hd")]]))
        headers = {h.key: h.value for h in resp.response_headers_to_add}
        self.assertEqual(headers.get("X-RateLimit-Limit"), "5")
        self.assertEqual(headers.get("X-RateLimit-Remaining"), "4")

    def test_errors(self):
        grpc = self.grpc
        with self.assertRaises(grpc.RpcError) as e:
            self.call(request("", [[("a", "b")]]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        raw = self.channel.unary_unary(
            "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
            request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with self.assertRaises(grpc.RpcError):
            raw(b"\x0a\xff\xff\xff\x0f", timeout=5)
        with self.assertRaises(grpc.RpcError) as e:
            self.call(request("rl_test", [[("remote_address", "x" * (100 << 10))]]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(self.call(request("rl_test", [[("free", "after")]])).overall_code,
                         rls.RateLimitResponse.Code.OK)


def rl_common_unit():
    from envoy.type.v3 import ratelimit_unit_pb2
    return ratelimit_unit_pb2


def main():
    global ARGS, SERVER, PORT, rls, rls_grpc
    parser = argparse.ArgumentParser()
    for flag in ("--server", "--protos", "--rules", "--protoc", "--plugin"):
        parser.add_argument(flag, required=True)
    ARGS, rest = parser.parse_known_args()
    try:
        import grpc  # noqa: F401
    except ImportError:
        print("python3-grpcio is not installed: skipped")
        return 77
    if not ARGS.protoc or not ARGS.plugin or not os.path.exists(ARGS.plugin):
        print("protoc / grpc_python_plugin not found: skipped")
        return 77
    work = tempfile.mkdtemp(prefix="rl-envoy-py-")
    try:
        generate_stubs(work)
        sys.path.insert(0, work)
        from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
        rls, rls_grpc = rls_pb2, rls_pb2_grpc
        SERVER, PORT = start_server(ARGS.rules)
        try:
            result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
        finally:
            SERVER.send_signal(signal.SIGTERM)
            SERVER.wait(timeout=15)
        return 0 if result.wasSuccessful() else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
