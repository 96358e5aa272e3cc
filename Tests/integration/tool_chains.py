"""Certificate chains made the way people make them, by the tools they use, at test time:
OpenSSL 3's `req -x509` with its defaults and with `-addext`, `openssl ca` (tls_pki), mkcert
with a temporary CAROOT, easy-rsa, GnuTLS `certtool` and trustme.

Each tool gives a CA and five server chains, all for `localhost` and 127.0.0.1 unless broken on
purpose:
- good: what the tool makes by default;
- wrong-host: a leaf for other.example only;
- expired: a leaf whose notAfter has passed;
- ca-no-certsign: the good leaf under a re-made CA (same name and key) whose keyUsage lacks
  keyCertSign, so only the anchor differs;
- client-only: a leaf whose extendedKeyUsage allows clientAuth alone.
Where a tool cannot make a variant itself (mkcert dates nothing in the past, easy-rsa's CA always
signs), the variant is made with the openssl CLI from the tool's own CA key, and the table says so.
Tools that make client certificates give one too, for upstream mTLS.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

VARIANTS = ("good", "wrong-host", "expired", "ca-no-certsign", "client-only")
# The refusal each broken variant gets (`server_trust_evaluation_failed`'s reason).
EXPECTED_REASON = {
    "good": None,
    "wrong-host": "hostname_mismatch",
    "expired": "expired",
    "ca-no-certsign": "invalid_chain",
    "client-only": "invalid_chain",
}


@dataclass
class ServerChain:
    fullchain: Path     # leaf first, then any intermediates
    key: Path
    anchor: Path        # the CA file a user lists in ca_files for it
    made_by: str        # the tool that made this variant


@dataclass
class ToolPKI:
    tool: str
    ca: Path
    ca_key: Path
    variants: dict[str, ServerChain] = field(default_factory=dict)
    client: tuple[Path, Path] | None = None   # (certificate, key) for mTLS


def run(argv, cwd: Path, env: dict | None = None, data: bytes | None = None) -> bytes:
    done = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, input=data,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}:\n{done.stderr.decode(errors='replace')}"
    return done.stdout


def openssl(*args, cwd: Path) -> bytes:
    return run(["openssl", *map(str, args)], cwd)


def cat(out: Path, *parts: Path) -> Path:
    out.write_bytes(b"".join(p.read_bytes() for p in parts))
    return out


# MARK: - openssl helpers for the variants a tool cannot make itself


def openssl_leaf(d: Path, name: str, ca: Path, ca_key: Path, *, san: str = "DNS:localhost,IP:127.0.0.1",
                 days: int = 30, eku: str | None = None) -> tuple[Path, Path]:
    """`openssl x509 -req` signed by a CA: the usual way to sign a server certificate by hand."""
    key, csr, cert = d / f"{name}.key", d / f"{name}.csr", d / f"{name}.pem"
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={name}", cwd=d)
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" + (f"extendedKeyUsage={eku}\n" if eku else ""))
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
            "-days", days, "-extfile", ext, cwd=d)
    return cert, key


def ca_without_certsign(d: Path, ca: Path, ca_key: Path) -> Path:
    """The CA re-made with the same name and key, its keyUsage lacking keyCertSign."""
    ext = d / "no-certsign.ext"
    ext.write_text("[v]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,digitalSignature,cRLSign\n"
                   "subjectKeyIdentifier=hash\n")
    out = d / "ca-no-certsign.pem"
    openssl("x509", "-in", ca, "-signkey", ca_key, "-days", 30, "-extfile", ext, "-extensions", "v", "-out", out, cwd=d)
    return out


def fill_by_openssl(pki: ToolPKI, d: Path, good: ServerChain, missing: list[str]):
    """The variants `missing` made with openssl from the tool's CA key."""
    for variant in missing:
        if variant == "ca-no-certsign":
            pki.variants[variant] = ServerChain(good.fullchain, good.key, ca_without_certsign(d, pki.ca, pki.ca_key), "openssl x509")
            continue
        options = {"wrong-host": {"san": "DNS:other.example"}, "expired": {"days": -1},
                   "client-only": {"eku": "clientAuth"}}[variant]
        cert, key = openssl_leaf(d, f"by-openssl-{variant}", pki.ca, pki.ca_key, **options)
        pki.variants[variant] = ServerChain(cert, key, pki.ca, "openssl x509 -req")


# MARK: - the tools


def openssl_req_defaults(d: Path) -> ToolPKI:
    """`openssl req -x509` with OpenSSL 3.0's defaults: basicConstraints CA:TRUE, no keyUsage."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", 30,
            "-subj", "/CN=root", cwd=d)
    pki = ToolPKI("openssl req -x509 (defaults)", d / "ca.pem", d / "ca.key")
    cert, key = openssl_leaf(d, "localhost", pki.ca, pki.ca_key)
    good = ServerChain(cert, key, pki.ca, "openssl x509 -req")
    pki.variants["good"] = good
    fill_by_openssl(pki, d, good, ["wrong-host", "expired", "ca-no-certsign", "client-only"])
    pki.client = openssl_leaf(d, "client", pki.ca, pki.ca_key, san="DNS:client.example", eku="clientAuth")
    return pki


def openssl_req_addext(d: Path) -> ToolPKI:
    """`openssl req -x509 -addext …`, as guides write it: an EC CA with keyUsage, a leaf with
    serverAuth."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", 30, "-subj", "/CN=Guide Root CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    pki = ToolPKI("openssl req -x509 -addext", d / "ca.pem", d / "ca.key")
    cert, key = openssl_leaf(d, "localhost", pki.ca, pki.ca_key, eku="serverAuth")
    good = ServerChain(cert, key, pki.ca, "openssl x509 -req")
    pki.variants["good"] = good
    fill_by_openssl(pki, d, good, ["wrong-host", "expired", "ca-no-certsign", "client-only"])
    return pki


def openssl_ca(d: Path) -> ToolPKI:
    """`openssl ca` with a root and an intermediate (tls_pki)."""
    from tls_pki import LEAF_EXTENSIONS, PKI

    pki_files = PKI(d / "pki")
    inter = pki_files.intermediate
    pki = ToolPKI("openssl ca", pki_files.root.cert, pki_files.root.key)
    leaf = pki_files.good
    pki.variants["good"] = ServerChain(leaf.fullchain, leaf.key, pki.ca, "openssl ca")
    wrong = inter.issue("wrong-host", common_name="other.example", san="DNS:other.example")
    pki.variants["wrong-host"] = ServerChain(wrong.fullchain, wrong.key, pki.ca, "openssl ca")
    pki.variants["expired"] = ServerChain(pki_files.expired.fullchain, pki_files.expired.key, pki.ca, "openssl ca")
    client_only = inter.issue("client-only", extensions=LEAF_EXTENSIONS.replace("serverAuth", "clientAuth"))
    pki.variants["client-only"] = ServerChain(client_only.fullchain, client_only.key, pki.ca, "openssl ca")
    pki.variants["ca-no-certsign"] = ServerChain(leaf.fullchain, leaf.key, ca_without_certsign(d, pki.ca, pki.ca_key),
                                                 "openssl x509")
    return pki


def mkcert(d: Path) -> ToolPKI:
    """mkcert with its CA in a temporary CAROOT (never installed anywhere)."""
    env = {"CAROOT": str(d / "caroot"), "TRUST_STORES": "none"}

    def make(name: str, *args: str) -> tuple[Path, Path]:
        cert, key = d / f"{name}.pem", d / f"{name}-key.pem"
        run(["mkcert", "-cert-file", str(cert), "-key-file", str(key), *args], d, env)
        return cert, key

    cert, key = make("localhost", "localhost", "127.0.0.1")
    pki = ToolPKI("mkcert", d / "caroot" / "rootCA.pem", d / "caroot" / "rootCA-key.pem")
    good = ServerChain(cert, key, pki.ca, "mkcert")
    pki.variants["good"] = good
    cert, key = make("wrong", "other.example")
    pki.variants["wrong-host"] = ServerChain(cert, key, pki.ca, "mkcert")
    cert, key = make("client", "-client", "client.example")
    pki.client = (cert, key)
    fill_by_openssl(pki, d, good, ["expired", "ca-no-certsign", "client-only"])
    return pki


def easy_rsa(d: Path) -> ToolPKI:
    """easy-rsa 3 (`easyrsa build-ca`, `build-server-full`, `build-client-full`)."""
    home = d / "easyrsa"
    shutil.copytree("/usr/share/easy-rsa", home)
    env = {"EASYRSA_PKI": str(home / "pki"), "EASYRSA_BATCH": "1"}
    easyrsa = [str(home / "easyrsa")]
    run(easyrsa + ["init-pki"], home, env)
    run(easyrsa + ["build-ca", "nopass"], home, {**env, "EASYRSA_REQ_CN": "Easy-RSA CA"})
    run(easyrsa + ["--subject-alt-name=DNS:localhost,IP:127.0.0.1", "build-server-full", "localhost", "nopass"], home, env)
    run(easyrsa + ["--subject-alt-name=DNS:other.example", "build-server-full", "other.example", "nopass"], home, env)
    run(easyrsa + ["build-client-full", "client", "nopass"], home, env)
    pki_dir = home / "pki"
    pki = ToolPKI("easy-rsa", pki_dir / "ca.crt", pki_dir / "private" / "ca.key")
    good = ServerChain(pki_dir / "issued" / "localhost.crt", pki_dir / "private" / "localhost.key", pki.ca, "easy-rsa")
    pki.variants["good"] = good
    pki.variants["wrong-host"] = ServerChain(pki_dir / "issued" / "other.example.crt",
                                             pki_dir / "private" / "other.example.key", pki.ca, "easy-rsa")
    client = (pki_dir / "issued" / "client.crt", pki_dir / "private" / "client.key")
    pki.client = client
    # easy-rsa's client certificate allows clientAuth alone: the client-only server variant.
    pki.variants["client-only"] = ServerChain(client[0], client[1], pki.ca, "easy-rsa")
    fill_by_openssl(pki, d, good, ["expired", "ca-no-certsign"])
    return pki


def certtool(d: Path) -> ToolPKI:
    """GnuTLS certtool with templates, as its manual shows."""
    def template(name: str, text: str) -> Path:
        path = d / f"{name}.tmpl"
        path.write_text(text)
        return path

    def key(name: str) -> Path:
        path = d / f"{name}.key"
        run(["certtool", "--generate-privkey", "--key-type", "ecdsa", "--outfile", str(path)], d)
        return path

    def sign(name: str, text: str, ca: Path, ca_key: Path) -> tuple[Path, Path]:
        k, cert = key(name), d / f"{name}.pem"
        run(["certtool", "--generate-certificate", "--load-privkey", str(k), "--load-ca-certificate", str(ca),
             "--load-ca-privkey", str(ca_key), "--template", str(template(name, text)), "--outfile", str(cert)], d)
        return cert, k

    ca_key = key("ca")
    ca = d / "ca.pem"
    run(["certtool", "--generate-self-signed", "--load-privkey", str(ca_key), "--outfile", str(ca),
         "--template", str(template("ca", 'cn = "GnuTLS Root"\nca\ncert_signing_key\ncrl_signing_key\nexpiration_days = 30\n'))], d)
    pki = ToolPKI("certtool", ca, ca_key)
    server = 'cn = "localhost"\ndns_name = "localhost"\nip_address = "127.0.0.1"\ntls_www_server\nsigning_key\nexpiration_days = 30\n'
    good = ServerChain(*sign("localhost", server, ca, ca_key), ca, "certtool")
    pki.variants["good"] = good
    wrong = server.replace('dns_name = "localhost"\nip_address = "127.0.0.1"\n', 'dns_name = "other.example"\n')
    pki.variants["wrong-host"] = ServerChain(*sign("wrong", wrong, ca, ca_key), ca, "certtool")
    expired = server.replace("expiration_days = 30\n", 'activation_date = "2020-01-01 00:00:00"\nexpiration_date = "2020-02-01 00:00:00"\n')
    pki.variants["expired"] = ServerChain(*sign("expired", expired, ca, ca_key), ca, "certtool")
    client_only = server.replace("tls_www_server", "tls_www_client")
    pki.variants["client-only"] = ServerChain(*sign("client-only", client_only, ca, ca_key), ca, "certtool")
    pki.client = sign("client", 'cn = "client"\ntls_www_client\nsigning_key\nexpiration_days = 30\n', ca, ca_key)
    no_certsign = d / "ca-no-certsign.pem"
    run(["certtool", "--generate-self-signed", "--load-privkey", str(ca_key), "--outfile", str(no_certsign),
         "--template", str(template("ca-no-certsign", 'cn = "GnuTLS Root"\nca\nsigning_key\nexpiration_days = 30\n'))], d)
    pki.variants["ca-no-certsign"] = ServerChain(good.fullchain, good.key, no_certsign, "certtool")
    return pki


def trustme_pki(d: Path) -> ToolPKI:
    """trustme (PyPI), the test CA of Python's HTTP libraries."""
    import datetime

    import trustme

    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    ca.private_key_pem.write_to_path(str(d / "ca.key"))
    pki = ToolPKI("trustme", d / "ca.pem", d / "ca.key")

    def issue(name: str, *identities: str, **kwargs) -> tuple[Path, Path]:
        leaf = ca.issue_cert(*identities, **kwargs)
        cert, key = d / f"{name}.pem", d / f"{name}.key"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(str(key))
        return cert, key

    good = ServerChain(*issue("localhost", "localhost", "127.0.0.1"), pki.ca, "trustme")
    pki.variants["good"] = good
    pki.variants["wrong-host"] = ServerChain(*issue("wrong", "other.example"), pki.ca, "trustme")
    past = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    pki.variants["expired"] = ServerChain(*issue("expired", "localhost", "127.0.0.1", not_before=past,
                                                 not_after=past + datetime.timedelta(days=30)), pki.ca, "trustme")
    pki.client = issue("client", "client@example.com")
    fill_by_openssl(pki, d, good, ["ca-no-certsign", "client-only"])
    return pki


TOOLS = {
    "openssl-req-defaults": openssl_req_defaults,
    "openssl-req-addext": openssl_req_addext,
    "openssl-ca": openssl_ca,
    "mkcert": mkcert,
    "easy-rsa": easy_rsa,
    "certtool": certtool,
    "trustme": trustme_pki,
}
MISSING = {"mkcert": "mkcert", "easy-rsa": "easy-rsa", "certtool": "gnutls-bin"}


def make_all(root: Path) -> dict[str, ToolPKI]:
    """Every tool's PKI under `root`; a tool that is not installed fails the caller loudly."""
    made = {}
    for name, maker in TOOLS.items():
        folder = root / name
        folder.mkdir(parents=True)
        made[name] = maker(folder)
    return made
