"""Test certificates made at test time with the openssl CLI (`openssl req` and `openssl ca`):
roots, intermediates, leaves with chosen names and validity, revocation (CRL, OCSP), and the
SPKI pins computed the way the issue defines them (`openssl x509 -pubkey | openssl pkey -pubin
-outform der | openssl dgst -sha256 -binary | base64`)."""

import base64
import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

CA_CONFIG = """
[ ca ]
default_ca = test_ca
[ test_ca ]
dir = {dir}
database = $dir/index.txt
new_certs_dir = $dir/issued
certificate = $dir/ca.pem
private_key = $dir/ca.key
serial = $dir/serial
crlnumber = $dir/crlnumber
default_md = sha256
default_days = 30
default_crl_days = 30
policy = any_name
unique_subject = no
copy_extensions = none
[ any_name ]
commonName = supplied
[ intermediate ]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""

LEAF_EXTENSIONS = """
[ leaf ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = {san}
"""

LOCAL_NAMES = "DNS:localhost, IP:127.0.0.1"


def openssl(*args: str, cwd: Path, data: bytes | None = None) -> bytes:
    done = subprocess.run(["openssl", *args], cwd=cwd, input=data, capture_output=True, timeout=60)
    assert done.returncode == 0, f"openssl {' '.join(args)}:\n{done.stderr.decode(errors='replace')}"
    return done.stdout


def new_key(path: Path) -> None:
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(path), cwd=path.parent)


def spki_pin(cert: Path) -> str:
    """sha256/BASE64 of the certificate's SubjectPublicKeyInfo, by the openssl pipeline."""
    pub = openssl("x509", "-in", str(cert), "-pubkey", "-noout", cwd=cert.parent)
    der = openssl("pkey", "-pubin", "-outform", "der", cwd=cert.parent, data=pub)
    digest = openssl("dgst", "-sha256", "-binary", cwd=cert.parent, data=der)
    assert digest == hashlib.sha256(der).digest()
    return "sha256/" + base64.b64encode(digest).decode()


@dataclass
class Leaf:
    cert: Path        # the leaf alone
    key: Path
    fullchain: Path   # leaf, then the issuing CAs below the root
    pin: str

    @property
    def tls(self) -> tuple[Path, Path]:
        """(certificate chain file, key) for a TLS origin."""
        return self.fullchain, self.key


class CA:
    """A certificate authority backed by an `openssl ca` database in its own folder."""

    def __init__(self, folder: Path, common_name: str, parent: "CA | None" = None):
        self.dir = folder
        folder.mkdir(parents=True)
        (folder / "issued").mkdir()
        (folder / "index.txt").write_text("")
        (folder / "serial").write_text("1000\n")
        (folder / "crlnumber").write_text("01\n")
        (folder / "ca.cnf").write_text(CA_CONFIG.format(dir=folder))
        self.key = folder / "ca.key"
        self.cert = folder / "ca.pem"
        self.parent = parent
        new_key(self.key)
        if parent is None:
            openssl("req", "-x509", "-new", "-key", "ca.key", "-out", "ca.pem", "-days", "30",
                    "-subj", f"/CN={common_name}",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", cwd=folder)
        else:
            openssl("req", "-new", "-key", "ca.key", "-out", "ca.csr", "-subj", f"/CN={common_name}", cwd=folder)
            openssl("ca", "-batch", "-config", str(parent.dir / "ca.cnf"), "-extensions", "intermediate",
                    "-notext", "-in", str(folder / "ca.csr"), "-out", str(self.cert), cwd=parent.dir)
        self.pin = spki_pin(self.cert)

    @property
    def chain_below_root(self) -> list[Path]:
        """This CA's certificate and its parents', without the root."""
        if self.parent is None:
            return []
        return [self.cert] + self.parent.chain_below_root

    def issue(self, name: str, *, common_name: str = "localhost", san: str = LOCAL_NAMES,
              start: str | None = None, end: str | None = None, key: Path | None = None,
              extensions: str | None = None) -> Leaf:
        """A leaf; ``start``/``end`` are `openssl ca` dates (YYYYMMDDHHMMSSZ); ``extensions``
        replaces the [ leaf ] section (``{san}`` is filled in)."""
        key = key or self.dir / f"{name}.key"
        if not key.exists():
            new_key(key)
        ext = self.dir / f"{name}.ext"
        ext.write_text((extensions or LEAF_EXTENSIONS).format(san=san))
        csr = self.dir / f"{name}.csr"
        openssl("req", "-new", "-key", str(key), "-out", str(csr), "-subj", f"/CN={common_name}", cwd=self.dir)
        cert = self.dir / f"{name}.pem"
        dates = (["-startdate", start] if start else []) + (["-enddate", end] if end else [])
        openssl("ca", "-batch", "-config", "ca.cnf", "-extfile", str(ext), "-extensions", "leaf", "-notext",
                *dates, "-in", str(csr), "-out", str(cert), cwd=self.dir)
        fullchain = self.dir / f"{name}-fullchain.pem"
        fullchain.write_text("".join(p.read_text() for p in [cert] + self.chain_below_root))
        return Leaf(cert, key, fullchain, spki_pin(cert))

    def revoke(self, leaf: Leaf, reason: str = "keyCompromise") -> None:
        openssl("ca", "-batch", "-config", "ca.cnf", "-revoke", str(leaf.cert), "-crl_reason", reason, cwd=self.dir)

    def crl(self, name: str = "crl.pem") -> Path:
        out = self.dir / name
        openssl("ca", "-batch", "-config", "ca.cnf", "-gencrl", "-out", str(out), cwd=self.dir)
        return out

    def ocsp_response(self, leaf: Leaf, name: str) -> Path:
        """A DER OCSP response about ``leaf``, signed by this CA, valid for a day."""
        request = self.dir / f"{name}.req"
        response = self.dir / f"{name}.ocsp"
        openssl("ocsp", "-issuer", str(self.cert), "-cert", str(leaf.cert), "-no_nonce", "-reqout", str(request),
                cwd=self.dir)
        openssl("ocsp", "-index", "index.txt", "-rsigner", str(self.cert), "-rkey", str(self.key),
                "-CA", str(self.cert), "-reqin", str(request), "-respout", str(response), "-ndays", "1", cwd=self.dir)
        return response


def self_signed(folder: Path, name: str = "self-signed", san: str = LOCAL_NAMES) -> Leaf:
    key = folder / f"{name}.key"
    cert = folder / f"{name}.pem"
    new_key(key)
    openssl("req", "-x509", "-new", "-key", str(key), "-out", str(cert), "-days", "30", "-subj", "/CN=localhost",
            "-addext", f"subjectAltName={san}", cwd=folder)
    return Leaf(cert, key, cert, spki_pin(cert))


class PKI:
    """root → intermediate → leaves: good, expired, not_yet_valid, wrong_host, other_key (same
    names as good, another key); a self-signed leaf; an unrelated second root with its own leaf."""

    def __init__(self, folder: Path):
        self.root = CA(folder / "root", "Lookout Test Root")
        self.intermediate = CA(folder / "intermediate", "Lookout Test Intermediate", parent=self.root)
        ca = self.intermediate
        self.good = ca.issue("good")
        self.expired = ca.issue("expired", start="20200101000000Z", end="20200201000000Z")
        self.not_yet_valid = ca.issue("not-yet-valid", start="20400101000000Z", end="20400201000000Z")
        self.wrong_host = ca.issue("wrong-host", common_name="wrong.example", san="DNS:wrong.example")
        self.other_key = ca.issue("other-key")
        self.self_signed = self_signed(folder)
        self.other_root = CA(folder / "other-root", "Another Test Root")
        self.other_root_leaf = self.other_root.issue("leaf")
