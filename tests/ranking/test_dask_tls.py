"""``websift rank --engine dask`` reaches a scheduler on another machine only over TLS.

Certificates are made with openssl as docs/several-machines.md says; a real scheduler on
127.0.0.1 that requires them (``distributed.Security``) is reached with ``--dask-tls-*``; a
``tls://`` address without them is refused.  A plain ``tcp://`` scheduler off loopback is refused before
any connection, with one line.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from distributed import LocalCluster, Security

from websift.api.cli import main
from websift.ranking.dask_engine import DaskEngine, DaskRankError, DaskTLS

pytestmark = pytest.mark.slow  # a TLS Dask cluster


def make_certificates(root: Path) -> tuple[Path, Path, Path]:
    """A CA, and one certificate for the cluster signed by it (the docs' openssl commands)."""
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=root, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=websift-ca",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=websift-dask",
        "-keyout", "dask.key", "-out", "dask.csr")
    run("x509", "-req", "-in", "dask.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-out", "dask.pem")
    return root / "ca.pem", root / "dask.pem", root / "dask.key"


def test_a_tls_scheduler_is_reached_with_the_certificates_only(tmp_path: Path) -> None:
    ca, cert, key = make_certificates(tmp_path)
    security = Security(tls_ca_file=str(ca), tls_scheduler_cert=str(cert),
                        tls_scheduler_key=str(key), tls_worker_cert=str(cert),
                        tls_worker_key=str(key), tls_client_cert=str(cert),
                        tls_client_key=str(key), require_encryption=True)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
                      host="127.0.0.1", security=security, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        engine = DaskEngine(scheduler=address, tls=DaskTLS(ca, cert, key), connect_timeout=20)
        with engine.connect() as client:
            assert client.submit(sum, [1, 2, 3]).result() == 6
        without = DaskEngine(scheduler=address, connect_timeout=2)
        with pytest.raises(DaskRankError, match="needs --dask-tls-ca"), without.connect():
            pass


@pytest.mark.parametrize("scheduler", ["tcp://10.0.0.5:8786", "tcp://0.0.0.0:8786",
                                       "scheduler.example:8786"])
def test_a_plain_scheduler_off_loopback_is_refused(
    scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["rank", "--data", str(tmp_path / "none"), "--engine", "dask", "--scheduler",
                 scheduler])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "tls://" in err, err
