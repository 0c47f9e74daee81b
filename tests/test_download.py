import hashlib
import http.client
import http.server
import threading

import pytest

from mixnmt import MixnmtError
from mixnmt.cli import main
from mixnmt.download import download, source_url

PAYLOAD = b"Ein Hund rennt .\n" * 100
SHA = hashlib.sha256(PAYLOAD).hexdigest()
SIZE = len(PAYLOAD)


@pytest.fixture
def server():
    """A local HTTP server; `plan` lists how to answer successive requests."""
    plan: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            how = plan.pop(0) if plan else "ok"
            if self.path != "/data/file.gz":
                self.send_error(404)
            elif how == "error":
                self.send_error(503)
            elif how in ("garbage", "oversized"):  # more than the pinned size, with or without saying so
                self.send_response(200)
                if how == "oversized":
                    self.send_header("Content-Length", str(10**12))
                self.end_headers()
                try:
                    for _ in range(1000):  # 64 MiB if nobody stops reading
                        self.wfile.write(bytes(1 << 16))
                except OSError:
                    pass
                self.close_connection = True
            elif how == "truncate":
                self.send_response(200)
                self.send_header("Content-Length", str(len(PAYLOAD)))
                self.end_headers()
                self.wfile.write(PAYLOAD[:50])
                self.close_connection = True
            else:
                self.send_response(200)
                self.send_header("Content-Length", str(len(PAYLOAD)))
                self.end_headers()
                self.wfile.write(PAYLOAD)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/data", plan
    httpd.shutdown()


def test_source_url_forms(tmp_path):
    assert source_url("https://host/a/", "f.gz") == "https://host/a/f.gz"
    assert source_url("file:///srv/m", "f.gz") == "file:///srv/m/f.gz"
    assert source_url(str(tmp_path), "f.gz") == (tmp_path / "f.gz").as_uri()


def test_download_from_local_folder_and_file_url(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "file.gz").write_bytes(PAYLOAD)
    for i, base in enumerate([str(mirror), mirror.as_uri()]):
        dest = tmp_path / f"out{i}" / "file.gz"
        download(source_url(base, "file.gz"), dest, SHA, SIZE)
        assert dest.read_bytes() == PAYLOAD


def test_download_retries_transient_http_errors(server, tmp_path):
    base, plan = server
    plan += ["error", "truncate"]
    dest = tmp_path / "file.gz"
    download(source_url(base, "file.gz"), dest, SHA, SIZE, retries=2, backoff=0.01)
    assert dest.read_bytes() == PAYLOAD


def test_download_truncated_every_time_fails_and_leaves_nothing(server, tmp_path):
    base, plan = server
    plan += ["truncate"] * 3
    dest = tmp_path / "file.gz"
    failed = r"file\.gz: download from .* failed after 3 attempts \(truncated"
    with pytest.raises(MixnmtError, match=failed) as e:
        download(source_url(base, "file.gz"), dest, SHA, SIZE, retries=2, backoff=0.01)
    assert str(e.value).endswith("; offline, point the workflow at a copy: --config mirror=DIR")
    assert list(tmp_path.iterdir()) == []


def test_download_interrupted_midway_leaves_nothing(server, tmp_path, monkeypatch):
    base, _ = server
    real_read = http.client.HTTPResponse.read1
    reads = {"n": 0}

    def read1(self, amt=-1):
        reads["n"] += 1
        if reads["n"] == 2:  # Ctrl-C after the first chunk was written
            raise KeyboardInterrupt
        return real_read(self, 100)

    monkeypatch.setattr(http.client.HTTPResponse, "read1", read1)
    with pytest.raises(KeyboardInterrupt):
        download(source_url(base, "file.gz"), tmp_path / "file.gz", SHA, SIZE)
    assert list(tmp_path.iterdir()) == []


def test_download_missing_file_is_final(server, tmp_path):
    base, _ = server
    with pytest.raises(MixnmtError, match="HTTP 404"):
        download(source_url(base, "nope.gz"), tmp_path / "nope.gz", SHA, SIZE, retries=3, backoff=10)
    assert list(tmp_path.iterdir()) == []


def test_checksum_mismatch_is_a_one_line_error_without_output(tmp_path, capsys):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    tampered = PAYLOAD[:-8] + b"tampered"
    (mirror / "file.gz").write_bytes(tampered)
    dest = tmp_path / "data" / "file.gz"
    assert main(["download", str(mirror), str(dest), "--sha256", SHA, "--size", str(SIZE)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith(f"mixnmt download: error: {dest}: sha256 mismatch")
    assert f"expected {SHA}, got {hashlib.sha256(tampered).hexdigest()}" in err
    assert not dest.exists() and list(dest.parent.iterdir()) == []


@pytest.mark.parametrize(("how", "says"), [("garbage", "sent more"), ("oversized", f"offers {10**12} bytes")])
def test_a_server_sending_more_than_the_pinned_size_is_stopped_there(how, says, server, tmp_path):
    base, plan = server
    plan.append(how)
    dest = tmp_path / "file.gz"
    with pytest.raises(MixnmtError) as raised:
        download(source_url(base, "file.gz"), dest, SHA, SIZE, retries=3, backoff=10)
    url = f"{base}/file.gz"
    assert str(raised.value) == f"{dest}: the config pins {SIZE} bytes, but {url} {says}; stopped there"
    assert list(tmp_path.iterdir()) == []
