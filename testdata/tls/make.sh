#!/bin/sh
# Regenerates the test certificates in this directory (see README.md).
set -eu
cd "$(dirname "$0")"
ec() { openssl ecparam -name prime256v1 -genkey -noout -out "$1"; }
ec ca-key.pem
openssl req -x509 -new -key ca-key.pem -sha256 -days 36500 -subj "/CN=cairn test CA" \
  -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out ca.pem
ec other-ca-key.pem
openssl req -x509 -new -key other-ca-key.pem -sha256 -days 36500 -subj "/CN=other test CA" \
  -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out other-ca.pem
leaf() { # name, CN, SANs, extended key usage
  ec "$1-key.pem"
  openssl req -new -key "$1-key.pem" -subj "/CN=$2" -out "$1.csr"
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=critical,CA:false\n' "$3" "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 36500 -sha256 -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}
leaf server "server.dc1.consul" "DNS:server.dc1.consul,DNS:localhost,IP:127.0.0.1" "serverAuth,clientAuth"
leaf client "client.dc1.consul" "DNS:client.dc1.consul,DNS:localhost,IP:127.0.0.1" "serverAuth,clientAuth"
leaf cli "cli.dc1.consul" "DNS:cli.dc1.consul" "clientAuth"
rm -f ca.srl
# A server certificate signed by the other CA (a reload test swaps it in).
ec other-server-key.pem
openssl req -new -key other-server-key.pem -subj "/CN=server.dc1.consul" -out other-server.csr
printf 'subjectAltName=DNS:server.dc1.consul,DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > other-server.ext
openssl x509 -req -in other-server.csr -CA other-ca.pem -CAkey other-ca-key.pem -CAcreateserial -days 36500 -sha256 -extfile other-server.ext -out other-server.pem
rm -f other-server.csr other-server.ext other-ca.srl
