// What `--secret NAME=HOSTS[=SOURCE]` (the `secrets` setting) describes: a credential the
// sandboxed command may use but never holds. Inside, the variable NAME holds a sentinel; the
// gate puts the real value in its place on requests to HOSTS (masked_secrets.hpp).
//
//   GITHUB_TOKEN=github.com,api.github.com          the value of $GITHUB_TOKEN
//   NPM_TOKEN=registry.npmjs.org=@~/.config/npm.tok  a file's contents (one trailing newline off)
//   GH_TOKEN=api.github.com=!gh auth token           a command's output, run once at start
//   AWS_SECRET_ACCESS_KEY=*.amazonaws.com=$AWS_KEY   another variable's value
//   ANTHROPIC_API_KEY                                a known credential: its API hosts
//   OPENAI_API_KEY==!pass show openai               the same, its value from a command
//                                                    (known_credentials.hpp lists them)
//
// Hosts are DNS names, or `*.name` for every name below `name`; no IP literals (a secret goes
// only where a certificate for a name was verified) and no ports (any TLS port of the host).
//
// Pure functions on values; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::secrets {

enum class SecretSource : unsigned char { variable, file, command };

struct SecretSpec {
  std::string name;                // the variable the command sees, e.g. GITHUB_TOKEN
  std::vector<std::string> hosts;  // normal form: "api.github.com", "*.amazonaws.com"
  SecretSource source = SecretSource::variable;
  // The variable to read (NAME unless `=$OTHER`), the file's path (`~` expanded by the caller's
  // setting), or the command line for /bin/sh -c.
  std::string from;

  friend bool operator==(const SecretSpec&, const SecretSpec&) = default;
};

// Parses one entry. The error is a sentence naming what is wrong, never quoting a value.
Expected<SecretSpec, std::string> parse_secret_spec(std::string_view text);

// The entry as it would be written (the form --help and the settings dump show): never a value,
// only where it comes from.
std::string secret_spec_text(const SecretSpec& spec);

// Whether `host` (normal form) is one of `spec`'s hosts.
bool secret_bound_to(const SecretSpec& spec, std::string_view host);

// The hosts of every secret, once each: the gate inspects them (a rules-file entry each), since
// it fills secrets in only on requests it sees.
std::vector<std::string> bound_hosts(const std::vector<SecretSpec>& specs);

// Whether `name` may name an environment variable: [A-Za-z_][A-Za-z0-9_]*.
bool is_variable_name(std::string_view name);

}  // namespace sandgate::secrets
