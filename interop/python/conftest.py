"""Fixtures and result recording for the Python interop suite.

`samsa` starts one `samsa server` subprocess for the whole session from the
binary in $SAMSA_BIN, on a temporary data directory and a kernel-chosen port
read back from its "serving Kafka clients" log line.

Every test outcome is appended to $INTEROP_RESULTS as
`client TAB feature TAB pass|fail|skip TAB note`; the client is the `client`
parameter of the test and the feature its `feature` marker, optionally with
the `param` marker's value appended.
"""

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

SERVING = re.compile(r'msg="serving Kafka clients" listener=PLAINTEXT addr=(\S+)')
REGISTRY = re.compile(r'msg="schema registry listening" listener=(\S+)')
REST_PROXY = re.compile(r'msg="rest proxy listening" listener=(\S+)')

CLIENT_NAMES = {
    "confluent": "python confluent-kafka",
    "kafkapython": "python kafka-python",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "feature(name, issue=None): matrix cell of the test")


class Samsa:
    def __init__(self):
        binary = os.environ.get("SAMSA_BIN")
        if not binary:
            raise RuntimeError("set SAMSA_BIN to a built samsa binary")
        self.tmp = tempfile.TemporaryDirectory(prefix="samsa-py-interop")
        self.data_dir = os.path.join(self.tmp.name, "data")
        self.log_path = os.path.join(self.tmp.name, "samsa.log")
        self.proc = subprocess.Popen(
            [binary, "server",
             "--override", "log.dirs=" + self.data_dir,
             "--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
             "--override", "schema.registry.listeners=http://127.0.0.1:0",
             "--override", "rest.proxy.listeners=http://127.0.0.1:0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ready = threading.Event()
        self.bootstrap = None
        self._registry = None  # the Schema Registry's URL, logged after the broker's line
        self._rest_proxy = None  # the REST Proxy's URL, likewise

        # Drains stderr for the server's whole life so its logger never blocks.
        def drain():
            with open(self.log_path, "w") as log:
                for line in self.proc.stderr:
                    log.write(line)
                    log.flush()
                    r = REGISTRY.search(line)
                    if r:
                        self._registry = r.group(1)
                    rp = REST_PROXY.search(line)
                    if rp:
                        self._rest_proxy = rp.group(1)
                    m = SERVING.search(line)
                    if m and not ready.is_set():
                        self.bootstrap = m.group(1)
                        ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(30) or self.bootstrap is None:
            self.stop()
            raise RuntimeError("samsa did not start:\n" + open(self.log_path).read())

    def registry_url(self):
        """The URL of the Schema Registry the server runs."""
        if not wait_until(lambda: self._registry is not None, timeout=30):
            raise RuntimeError("no schema registry in the log:\n" + open(self.log_path).read())
        return self._registry

    def rest_proxy_url(self):
        """The URL of the REST Proxy the server runs."""
        if not wait_until(lambda: self._rest_proxy is not None, timeout=30):
            raise RuntimeError("no rest proxy in the log:\n" + open(self.log_path).read())
        return self._rest_proxy

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def create_topic(self, name, partitions=1, config=None):
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        fs = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})],
                                 request_timeout=15)
        fs[name].result(timeout=15)


_start_error = []


@pytest.fixture(scope="session")
def samsa():
    # pytest retries a failed session fixture for every test; remember the
    # failure so a broken server costs one 30 s wait, not one per test.
    if _start_error:
        raise RuntimeError(_start_error[0])
    try:
        s = Samsa()
    except RuntimeError as e:
        _start_error.append(str(e))
        raise
    yield s
    s.stop()
    s.tmp.cleanup()


@pytest.fixture
def topic():
    """A fresh topic name per test (the topic is created by the test)."""
    return "py-" + uuid.uuid4().hex[:12]


def _cell(item):
    client = item.callspec.params.get("client") if hasattr(item, "callspec") else None
    marker = item.get_closest_marker("feature")
    feature = marker.args[0] if marker else item.name
    issue = marker.kwargs.get("issue") if marker else None
    if hasattr(item, "callspec"):
        extra = [f"{k}={v}" for k, v in item.callspec.params.items() if k != "client"]
        if extra:
            feature += " " + " ".join(extra)
    return CLIENT_NAMES.get(client, client or "python"), feature, issue


def _record(item, status, note):
    path = os.environ.get("INTEROP_RESULTS")
    if not path:
        return
    client, feature, issue = _cell(item)
    if status == "fail" and issue:
        note = f"issue {issue} ({note})"
    note = " ".join(str(note).split())[:200]
    with open(path, "a") as f:
        f.write(f"{client}\t{feature}\t{status}\t{note}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    # One line per test: the call phase decides, or setup when it did not pass.
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        if rep.passed:
            _record(item, "pass", "")
        elif rep.skipped:
            reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
            _record(item, "skip", reason.removeprefix("Skipped: "))
        else:
            msg = call.excinfo.exconly() if call.excinfo else str(rep.longrepr)
            _record(item, "fail", msg.splitlines()[0] if msg else "")


def wait_until(cond, timeout=20, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(step)
    return False
