#!/usr/bin/env bash
# A test certificate authority and the certificates strata's TLS tests use,
# made with the openssl command line (Debian's openssl package) into DIR:
#
#   ca.pem, ca.key            the test CA (self-signed, 2 days)
#   server.pem, server.key    signed by it, for 127.0.0.1, ::1 and localhost
#   client.pem, client.key    signed by it, CN=strata-peer (a peer or client, for mutual TLS)
#   other-ca.pem              another CA, which signed nothing here
#   stranger.pem, stranger.key  signed by other-ca: untrusted by whoever trusts ca.pem
#
# Usage: scripts/make-test-certs.sh DIR   (made if missing; files there are replaced)
# For tests only: keys are unencrypted and valid for two days.
set -euo pipefail
dir="${1:?usage: make-test-certs.sh DIR}"
mkdir -p "${dir}"
cd "${dir}"
command -v openssl >/dev/null || { echo "make-test-certs: openssl is missing (Debian: openssl)" >&2; exit 1; }

quiet() { "$@" >/dev/null 2>&1 || { echo "make-test-certs: failed: $*" >&2; "$@"; exit 1; }; }

ca() {  # ca NAME CN
  quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

leaf() {  # leaf NAME CN CA EXTENSIONS
  quiet openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf '%s\n' "$4" >"$1.ext"
  quiet openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" -days 2 \
    -extfile "$1.ext"
  rm -f "$1.csr" "$1.ext"
}

ca ca "strata test CA"
ca other-ca "another test CA"
leaf server "strata-server" ca \
  "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
extendedKeyUsage=serverAuth"
leaf client "strata-peer" ca "extendedKeyUsage=clientAuth,serverAuth"
leaf stranger "strata-server" other-ca \
  "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
rm -f ./*.srl
