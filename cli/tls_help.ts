// The help texts of `cairn tls` and its groups, apart from the commands so the
// command table can list them without loading certificate code.
export const TLS_HELP = `
Usage: cairn tls <subcommand> <subcommand> [options]

  This command has subcommands for interacting with Cairn TLS: a CA and
  certificates for agents, in the files and with the names Consul's
  "consul tls" makes.

  Here are some simple examples, and more detailed examples are available
  in the subcommands or the documentation.

  Create a CA

    $ cairn tls ca create

  Create a server certificate

    $ cairn tls cert create -server

  Create a client certificate

    $ cairn tls cert create -client

  For more examples, ask for subcommand help or view the documentation.
`;

export const TLS_CA_HELP = `
Usage: cairn tls ca <subcommand> [options]

  This command has subcommands for interacting with Certificate Authorities.

  Create a CA

    $ cairn tls ca create
    ==> Saved consul-agent-ca.pem
    ==> Saved consul-agent-ca-key.pem
`;

export const TLS_CERT_HELP = `
Usage: cairn tls cert <subcommand> [options]

  This command has subcommands for interacting with certificates.

  Create a certificate

    $ cairn tls cert create -server
    ==> Saved dc1-server-consul-0.pem
    ==> Saved dc1-server-consul-0-key.pem

  Create a certificate with your own CA:

    $ cairn tls cert create -server -ca my-ca.pem -key my-ca-key.pem
`;
