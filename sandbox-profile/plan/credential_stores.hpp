// The credential stores `sandgate run` hides from the confined command by default: an agent that
// can read ~/.aws/credentials and reach one allowed host can send the key there, whatever the
// allowlist says. What is hidden:
//   - whole folders that hold nothing but credentials and their tools' state: ~/.aws,
//     ~/.config/gcloud, ~/.azure, ~/.kube, ~/.minikube, ~/.gnupg/private-keys-v1.d,
//     ~/.password-store, ~/.local/share/keyrings, the browsers' profiles (Firefox, Chrome and
//     its beta, Chromium, Brave, Edge, Vivaldi, their snap and flatpak installs; on macOS also
//     ~/Library/Keychains and ~/Library/Cookies), ~/.oci, Bitwarden's CLI folder, svn's
//     ~/.subversion/auth, ~/.cloudflared, atuin's ~/.local/share/atuin, and sandgate's own run
//     logs (~/.local/state/sandgate/runs);
//   - single files in folders that must stay readable: ~/.netrc, ~/.git-credentials,
//     git's and gh's credentials under ~/.config (or $XDG_CONFIG_HOME), ~/.docker/config.json,
//     ~/.npmrc, ~/.pypirc, ~/.pgpass, ~/.gnupg/secring.gpg, ~/.vault-token,
//     ~/.cargo/credentials(.toml), ~/.terraformrc, ~/.terraform.d/credentials.tfrc.json,
//     rclone's config, Hugging Face's token, Claude Code's credentials, and the logins of
//     Codex (~/.codex/auth.json), Gemini CLI, GitHub Copilot, glab, hub, RubyGems, Maven
//     (settings.xml and settings-security.xml), Gradle (gradle.properties), Composer, Poetry,
//     Yarn (.yarnrc.yml), s3cmd (~/.s3cfg), boto, MySQL (~/.my.cnf, ~/.mylogin.cnf), Databricks,
//     Snowflake, doctl, flyctl, Pulumi, OpenStack, Linode, Wrangler, Vercel, Netlify, Firebase,
//     Supabase, ngrok, Kaggle, Sentry, Helm's repositories and sops's age keys; registries'
//     logins and index settings (podman's auth.json, Helm's OCI logins, Bundler, pip.conf,
//     .condarc, NuGet, sbt, Ivy), Mercurial, MinIO's client, s3fs, Stripe, Hetzner Cloud,
//     Railway, Talos, CircleCI, WakaTime; agents' keys (opencode, goose, llm, aider, a home
//     .env, ~/.claude.json); and the histories of shells and REPLs (bash, zsh, fish, psql,
//     mysql, python, node, sqlite, redis-cli, mongo, IPython), which hold pasted tokens
//     (kMoreCredentialFiles in the .cpp);
//   - ~/.ssh, but for what ssh reads that holds no secret (an allow-list): known_hosts*,
//     config, config.d, authorized_keys*, *.pub. The private keys stay hidden; the SSH agent
//     (SSH_AUTH_SOCK) stays reachable, so ssh and git still authenticate through it;
//   - where the tools' variables move them: AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE,
//     CLOUDSDK_CONFIG, AZURE_CONFIG_DIR, KUBECONFIG (each file of its list), DOCKER_CONFIG,
//     GNUPGHOME (its private-keys-v1.d), PASSWORD_STORE_DIR, GH_CONFIG_DIR, NETRC,
//     CARGO_HOME (its credentials), TF_CLI_CONFIG_FILE, VAULT_CONFIG_PATH, NPM_CONFIG_USERCONFIG,
//     GOOGLE_APPLICATION_CREDENTIALS, HF_TOKEN_PATH, CODEX_HOME, CLAUDE_CONFIG_DIR,
//     GLAB_CONFIG_DIR, GRADLE_USER_HOME, COMPOSER_HOME, PULUMI_HOME, KAGGLE_CONFIG_DIR,
//     FLY_CONFIG_DIR, S3CMD_CONFIG, BOTO_CONFIG, DATABRICKS_CONFIG_FILE, OCI_CLI_CONFIG_FILE,
//     RCLONE_CONFIG, PGPASSFILE, SOPS_AGE_KEY_FILE, OS_CLIENT_CONFIG_FILE, HELM_REPOSITORY_CONFIG,
//     REGISTRY_AUTH_FILE, HELM_REGISTRY_CONFIG, BUNDLE_USER_CONFIG, BUNDLE_USER_HOME,
//     PIP_CONFIG_FILE, CONDARC, HCLOUD_CONFIG, TALOSCONFIG, WAKATIME_HOME, LLM_USER_PATH, the
//     histories' HISTFILE, PSQL_HISTORY, MYSQL_HISTFILE, NODE_REPL_HISTORY, PYTHON_HISTORY,
//     SQLITE_HISTORY, REDISCLI_HISTFILE; and XDG_CONFIG_HOME, XDG_DATA_HOME and XDG_STATE_HOME
//     for every store under ~/.config, ~/.local/share and ~/.local/state.
// A file that may hold a credential is hidden whole, whatever it holds now (pip.conf, .condarc
// and .hgrc also hold settings): judging by content would be a deny-list of the ways to write
// a token, and --allow-read gives one back.
// The ~/.ssh allow-list takes only regular files (config.d: a folder), never a link, and no
// `*.pub` that holds a private key. Best effort: a store not listed here, or a secret in an
// environment variable, is the command's to read.
// `--allow-read PATH` opens one: a store that is PATH or lies inside it is not hidden, and a
// PATH inside a hidden folder is shown in it.
//
// Pure but for the file system's answers (what exists, what is a folder). Paths are resolved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandgate::sandbox {

struct CredentialStores {
  std::vector<std::string> folders;  // hidden whole: empty inside
  std::vector<std::string> files;    // hidden one by one: read as empty
  // Paths inside `folders` that stay readable (~/.ssh's known_hosts, an --allow-read path).
  std::vector<std::string> shown;
};

// The stores of each of `homes` ($HOME, and the passwd entry's home when it differs: ssh and
// many tools read the latter whatever $HOME says) and of the variables in `environment`
// (NAME=VALUE entries) that exist, less what `allow_reads` (resolved paths) opens. `macos`: the
// macOS places as well (Keychains, Library browser profiles).
CredentialStores credential_stores(const std::vector<std::string>& homes,
                                   const std::vector<std::string>& environment,
                                   const std::vector<std::string>& allow_reads, bool macos);

// Adds the gate's own secret files (its token, admin token and parent-proxy credentials files,
// GateView::secret_files) that exist to `stores`, whatever --allow-read says: the command never
// reads the keys to the gate itself.
void add_gate_secrets(CredentialStores& stores, const std::vector<std::string>& files);

// What the command attempted on a hidden credential store, as far as the platform sees it
// (Linux: sandbox-profile/linux/store_reads.hpp), for the run's summary.
struct StoreAttempt {
  std::string path;
  bool listed = false;  // the folder itself was opened (a listing), not a file read
  std::uint64_t count = 0;
};

}  // namespace sandgate::sandbox
